#include "util/cpu_steal.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace translution {
namespace {

TEST(CpuSteal, ParsesTheMachineLineOfProcStat) {
  const std::string text =
      "cpu  100 5 50 800 10 1 4 30 7 0\n"
      "cpu0 50 2 25 400 5 0 2 15 0 0\n"
      "intr 12345\n";
  const CpuTimes t = parse_cpu_times(text);
  EXPECT_EQ(t.total, 100u + 5 + 50 + 800 + 10 + 1 + 4 + 30) << "guest time is inside user and nice";
  EXPECT_EQ(t.steal, 30u);
}

TEST(CpuSteal, AnOldKernelWithoutStealReadsZero) {
  const CpuTimes t = parse_cpu_times("cpu 10 0 5 85\n");
  EXPECT_EQ(t.total, 100u);
  EXPECT_EQ(t.steal, 0u);
}

TEST(CpuSteal, MalformedTextNamesWhatIsWrong) {
  try {
    parse_cpu_times("cpu 10 x\n");
    FAIL() << "a cpu line with one number parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 numeric fields"), std::string::npos) << e.what();
  }
  try {
    parse_cpu_times("cpu0 1 2 3 4\nintr 5\n");
    FAIL() << "text without the machine's line parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no 'cpu' line"), std::string::npos) << e.what();
  }
}

TEST(CpuSteal, FractionOfTheTimeBetweenTwoReadings) {
  const CpuTimes a{1000, 100}, b{1400, 160};
  EXPECT_DOUBLE_EQ(steal_fraction(a, b), 60.0 / 400.0);
  EXPECT_EQ(steal_fraction(a, a), -1) << "no time passed";
  EXPECT_EQ(steal_fraction(std::nullopt, b), -1);
  EXPECT_EQ(steal_fraction(a, std::nullopt), -1);
  EXPECT_EQ(steal_fraction(b, a), -1) << "counters never run backwards";
}

TEST(CpuSteal, ThisMachinesCountersAdvance) {
  const std::optional<CpuTimes> before = read_cpu_times();
  if (!before) GTEST_SKIP() << "no readable /proc/stat here";
  volatile double sink = 0;
  std::optional<CpuTimes> after = read_cpu_times();
  // Spin until the kernel's tick has counted some time (a tick is at most 10 ms).
  for (int i = 0; i < 2000 && after->total == before->total; ++i) {
    for (int k = 0; k < 100000; ++k) sink = sink + k;
    after = read_cpu_times();
  }
  ASSERT_GT(after->total, before->total);
  const double f = steal_fraction(before, after);
  EXPECT_GE(f, 0.0);
  EXPECT_LE(f, 1.0);
}

}  // namespace
}  // namespace translution
