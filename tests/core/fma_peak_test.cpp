#include "util/fma_peak.h"

#include <cmath>

#include <gtest/gtest.h>

namespace translution {
namespace {

// The loop must really run: one the compiler dropped, or iterations counted that
// never ran, read far above what any core can do (the bound allows two full-width
// FMA units at 6 GHz, so it catches gross errors, not a factor of two); a rate
// below 1 GFLOP/s per core is no vector loop at all.
TEST(FmaPeak, MeasuresAPlausibleRateWithTheWidestVectors) {
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx512 && !avx2) GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 with FMA";
  const FmaPeak one = measure_fma_peak(1, 0.005);
  EXPECT_EQ(one.isa, avx512 ? "avx512" : "avx2");
  ASSERT_TRUE(std::isfinite(one.gflops));
  // At most two FMA units of 16 (or 8) lanes, 2 FLOPs each, at 6 GHz.
  const double most_per_core = 2.0 * (avx512 ? 16 : 8) * 2.0 * 6.0;
  EXPECT_GT(one.gflops, 1.0);
  EXPECT_LT(one.gflops, most_per_core);
  const FmaPeak two = measure_fma_peak(2, 0.005);
  EXPECT_GT(two.gflops, 1.0);
  EXPECT_LT(two.gflops, 2 * most_per_core);
#else
  const FmaPeak peak = measure_fma_peak(1);
  EXPECT_LT(peak.gflops, 0) << "not measured off x86";
  EXPECT_TRUE(peak.isa.empty());
#endif
}

}  // namespace
}  // namespace translution
