#include "data/mnist.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "data/mnist_provision.h"
#include "temp_dir.h"
#include "util/error.h"

using namespace translution;

// The real files, as scripts/test.sh provisions them. Failing (not skipping) when
// absent keeps the suite honest: these checks must run in CI.
TEST(MnistReal, FilesVerifyAndLoadWithExpectedCounts) {
  const std::string dir = test_support::mnist_dir();
  ASSERT_FALSE(dir.empty()) << "TRANSLUTION_DATA is not set";
  for (const auto& status : check_mnist_dir(dir))
    EXPECT_TRUE(status.ok()) << status.path << ": " << status.problem();
  const MnistDigits train = load_mnist(dir, Split::Train);
  const MnistDigits test = load_mnist(dir, Split::Test);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.images.sizes(), (std::vector<int64_t>{10000, 28, 28}));
  // Every class is well represented in the test split (MNIST has 892..1135 per class).
  const at::Tensor counts = at::bincount(test.labels, {}, 10);
  EXPECT_GT(counts.min().item<int64_t>(), 800);
  // The second test digit of MNIST is a 2; the first training digit a 5.
  EXPECT_EQ(test.labels[1].item<int64_t>(), 2);
  EXPECT_EQ(train.labels[0].item<int64_t>(), 5);
}

TEST(Mnist, MissingDirectorySaysToFetch) {
  try {
    load_mnist("/nonexistent/mnist", Split::Test);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("translution data fetch"), std::string::npos) << e.what();
  }
}

TEST(Mnist, ParsesSplitNames) {
  EXPECT_EQ(parse_split("train"), Split::Train);
  EXPECT_EQ(parse_split("test"), Split::Test);
  EXPECT_THROW(parse_split("validation"), Error);
}
