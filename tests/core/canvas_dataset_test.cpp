#include "data/canvas_dataset.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/data.h>

#include "temp_dir.h"
#include "util/error.h"

using namespace translution;

namespace {

// Synthetic digits: random ink in a 20x20 box, like MNIST's layout.
MnistDigits synthetic_digits(int64_t n) {
  at::manual_seed(7);
  MnistDigits d;
  d.images = at::zeros({n, 28, 28}, at::kByte);
  d.images.narrow(1, 4, 20).narrow(2, 4, 20).copy_(at::randint(1, 256, {n, 20, 20}).to(at::kByte));
  d.labels = at::arange(n, at::kLong).remainder(10);
  return d;
}

}  // namespace

TEST(CanvasDataset, StaticEqualsTheDigitCentred) {
  CanvasDataset ds(synthetic_digits(8), Split::Test, {CanvasKind::Static});
  const at::Tensor canvas = ds.canvas(3);
  ASSERT_EQ(canvas.sizes(), (std::vector<int64_t>{84, 84}));
  const at::Tensor digit = ds.digits().images[3].to(at::kFloat) / 255.0;
  EXPECT_TRUE(at::equal(canvas.narrow(0, 28, 28).narrow(1, 28, 28), digit));
  EXPECT_EQ(canvas.sum().item<double>(), at::Scalar(digit.sum().item<double>()).toDouble());
}

TEST(CanvasDataset, MnistKindIsThePlainDigit) {
  CanvasDataset ds(synthetic_digits(4), Split::Train, {CanvasKind::Mnist});
  EXPECT_TRUE(at::equal(ds.canvas(2), ds.digits().images[2].to(at::kFloat) / 255.0));
  EXPECT_THROW(CanvasDataset(synthetic_digits(4), Split::Train, {CanvasKind::Mnist, 84}), Error);
}

TEST(CanvasDataset, PixelMassIsPreservedAndDigitFullyInside) {
  for (CanvasKind kind : {CanvasKind::Dynamic, CanvasKind::Moving}) {
    CanvasDataset ds(synthetic_digits(64), Split::Train, {kind});
    for (int64_t i = 0; i < 64; ++i) {
      const double digit_mass = ds.digits().images[i].to(at::kDouble).sum().item<double>() / 255.0;
      const at::Tensor canvas = ds.canvas(i).to(at::kDouble);
      ASSERT_NEAR(canvas.sum().item<double>(), digit_mass, 1e-4) << canvas_kind_name(kind) << " " << i;
      const Placement p = ds.placement(i);
      const double inside = canvas.narrow(0, p.y, 28).narrow(1, p.x, 28).sum().item<double>();
      ASSERT_NEAR(inside, digit_mass, 1e-4);  // float rounding of x/255
    }
  }
}

TEST(CanvasDataset, DeterministicAcrossInstances) {
  CanvasDataset a(synthetic_digits(32), Split::Test, {CanvasKind::Dynamic, 84, 5});
  CanvasDataset b(synthetic_digits(32), Split::Test, {CanvasKind::Dynamic, 84, 5});
  for (int64_t i = 0; i < 32; ++i) ASSERT_TRUE(at::equal(a.get(size_t(i)).data, b.get(size_t(i)).data));
}

TEST(CanvasDataset, ExamplesAreNormalisedWithLabels) {
  CanvasDataset ds(synthetic_digits(16), Split::Train, {CanvasKind::Dynamic});
  const auto example = ds.get(13);
  ASSERT_EQ(example.data.sizes(), (std::vector<int64_t>{1, 84, 84}));
  EXPECT_EQ(example.target.item<int64_t>(), 3);
  // Background pixels map to -mean/std.
  EXPECT_NEAR(example.data.min().item<float>(), -kMnistMean / kMnistStd, 1e-6);
  EXPECT_TRUE(at::allclose(example.data, normalize_pixels(ds.canvas(13).unsqueeze(0))));
}

TEST(CanvasDataset, BatchesThroughTheLibTorchStackTransform) {
  CanvasDataset ds(synthetic_digits(10), Split::Train, {CanvasKind::Static});
  auto stacked = ds.map(torch::data::transforms::Stack<>());
  const auto batch = stacked.get_batch({0, 4, 9});
  EXPECT_EQ(batch.data.sizes(), (std::vector<int64_t>{3, 1, 84, 84}));
  EXPECT_EQ(batch.target[1].item<int64_t>(), 4);
}

TEST(CanvasDataset, IndexOutOfRangeIsAnError) {
  CanvasDataset ds(synthetic_digits(4), Split::Test, {CanvasKind::Static});
  EXPECT_THROW(ds.canvas(4), Error);
  EXPECT_THROW(ds.canvas(-1), Error);
}

TEST(CanvasDataset, RejectsCanvasSmallerThanDigit) {
  EXPECT_THROW(CanvasDataset(synthetic_digits(2), Split::Test, {CanvasKind::Dynamic, 20}), Error);
}

TEST(CanvasDataset, ParsesKindNames) {
  EXPECT_EQ(parse_canvas_kind("moving"), CanvasKind::Moving);
  EXPECT_EQ(default_canvas_size(CanvasKind::Moving), 64);
  EXPECT_THROW(parse_canvas_kind("cifar"), Error);
}

TEST(CanvasDatasetReal, TrainAndTestSplitsAreDisjointSources) {
  const std::string dir = test_support::mnist_dir();
  ASSERT_FALSE(dir.empty());
  CanvasDataset train(load_mnist(dir, Split::Train), Split::Train, {CanvasKind::Dynamic});
  CanvasDataset test(load_mnist(dir, Split::Test), Split::Test, {CanvasKind::Dynamic});
  EXPECT_EQ(*train.size(), 60000u);
  EXPECT_EQ(*test.size(), 10000u);
  // Same index, different split: different digit image and (almost always) position.
  int identical = 0;
  for (int64_t i = 0; i < 200; ++i) identical += at::equal(train.canvas(i), test.canvas(i));
  EXPECT_EQ(identical, 0);
}
