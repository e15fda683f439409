// The shift measures measure what they say: pairs where they should be, consistency and worst
// case against classifiers whose answers are known, and an equivariance error that is zero where
// tokens cannot mix and not zero once an absolute position is added.
#include "train/shift_metrics.h"

#include <map>
#include <set>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "data/canvas_dataset.h"
#include "image/ink.h"
#include "temp_dir.h"
#include "train/translation_sweep.h"
#include "util/error.h"

namespace translution {
namespace {

using test_support::mnist_dir;

TEST(ShiftMetrics, PairsAreOneShiftApartOnTheCanvasInEveryDirection) {
  for (const int64_t shift : {1, 12}) {
    const std::vector<ShiftPair> pairs = shift_pairs(400, 84, 28, shift, 7);
    std::set<std::pair<int64_t, int64_t>> directions;
    std::set<int64_t> firsts;
    for (const ShiftPair& p : pairs) {
      EXPECT_EQ(std::abs(p.dx) + std::abs(p.dy), shift);
      EXPECT_TRUE(p.dx == 0 || p.dy == 0);
      for (const int64_t v : {p.x0, p.y0, p.x0 + p.dx, p.y0 + p.dy}) {
        EXPECT_GE(v, 0);
        EXPECT_LE(v, 56);
      }
      directions.insert({p.dx, p.dy});
      firsts.insert(p.x0);
    }
    EXPECT_EQ(directions.size(), 4u);
    EXPECT_GT(firsts.size(), 40u);  // spread over the canvas, not a few fixed places
  }
  const std::vector<ShiftPair> a = shift_pairs(50, 84, 28, 1, 3), b = shift_pairs(50, 84, 28, 1, 3);
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_TRUE(a[k].x0 == b[k].x0 && a[k].y0 == b[k].y0 && a[k].dx == b[k].dx);
  EXPECT_THROW(shift_pairs(10, 84, 28, 57, 0), Error);
}

// Class = the parity of the ink's leftmost column: a 1-px move along x always flips it, along y never.
at::Tensor parity_classifier(const at::Tensor& canvases) {
  at::Tensor out = at::zeros({canvases.size(0), 10});
  for (int64_t i = 0; i < canvases.size(0); ++i) out[i][ink_box(canvases[i][0]).left % 2] = 1;
  return out;
}

TEST(ShiftMetrics, ConsistencyCountsTheDigitsWhoseCopiesAgree) {
  ASSERT_FALSE(mnist_dir().empty());
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  const ShiftConsistency one = shift_consistency(parity_classifier, test, 84, 300, 1, 5);
  int64_t vertical = 0;
  for (const ShiftPair& p : shift_pairs(300, 84, 28, 1, 5)) vertical += p.dx == 0;
  EXPECT_EQ(one.digits, 300);
  EXPECT_DOUBLE_EQ(one.consistency, double(vertical) / 300.0);
  EXPECT_GT(one.consistency, 0.3);
  EXPECT_LT(one.consistency, 0.7);
  EXPECT_DOUBLE_EQ(shift_consistency(parity_classifier, test, 84, 300, 12, 5).consistency, 1.0);
}

TEST(ShiftMetrics, RandomPairsAreTwoIndependentPlacesOnTheCanvas) {
  const std::vector<ShiftPair> pairs = random_pairs(2000, 84, 28, 7);
  std::set<int64_t> firsts, seconds;
  int64_t diagonal = 0;
  for (const ShiftPair& p : pairs) {
    for (const int64_t v : {p.x0, p.y0, p.x0 + p.dx, p.y0 + p.dy}) {
      EXPECT_GE(v, 0);
      EXPECT_LE(v, 56);
    }
    firsts.insert(p.x0);
    seconds.insert(p.x0 + p.dx);
    diagonal += p.dx != 0 && p.dy != 0;
  }
  EXPECT_EQ(firsts.size(), 57u);  // every column of corners, for both copies
  EXPECT_EQ(seconds.size(), 57u);
  EXPECT_GT(diagonal, 1800);  // not along an axis: both coordinates drawn anew
  const std::vector<ShiftPair> a = random_pairs(50, 84, 28, 3), b = random_pairs(50, 84, 28, 3);
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_TRUE(a[k].x0 == b[k].x0 && a[k].y0 == b[k].y0 && a[k].dx == b[k].dx && a[k].dy == b[k].dy);
  EXPECT_THROW(random_pairs(10, 20, 28, 0), Error);
}

// The parity classifier agrees with itself exactly when the copies are an even number of columns
// apart.
TEST(ShiftMetrics, RandomPairConsistencyCountsTheDigitsWhoseCopiesAgree) {
  ASSERT_FALSE(mnist_dir().empty());
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  const ShiftConsistency c = random_pair_consistency(parity_classifier, test, 84, 300, 5);
  int64_t even = 0;
  for (const ShiftPair& p : random_pairs(300, 84, 28, 5)) even += p.dx % 2 == 0;
  EXPECT_EQ(c.shift, 0);
  EXPECT_EQ(c.digits, 300);
  EXPECT_DOUBLE_EQ(c.consistency, double(even) / 300.0);
}

// Knows each digit by its ink (the sum of its pixels, the same at every position) and answers its
// label, except for ones whose ink starts below row 40, which it calls 7 with the same confidence.
struct LowOnesWrong {
  std::map<int64_t, int64_t> label_of_ink;
  at::Tensor operator()(const at::Tensor& canvases) const {
    at::Tensor out = at::zeros({canvases.size(0), 10}, at::kDouble);
    for (int64_t i = 0; i < canvases.size(0); ++i) {
      const int64_t ink = canvases[i][0].mul(255).round().sum().item<double>();
      const int64_t label = label_of_ink.at(ink);
      out[i][label == 1 && ink_box(canvases[i][0]).top > 40 ? 7 : label] = 5.0;
    }
    return out;
  }
};

TEST(ShiftMetrics, WorstCaseIsTheShareRightEverywhereAndTheMeansAreTheSweeps) {
  ASSERT_FALSE(mnist_dir().empty());
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  const int64_t count = 40;
  LowOnesWrong classifier;
  int64_t ones = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t ink = test.images[i].to(at::kLong).sum().item<int64_t>();
    ASSERT_TRUE(classifier.label_of_ink.emplace(ink, test.labels[i].item<int64_t>()).second)
        << "two digits share their ink";
    ones += test.labels[i].item<int64_t>() == 1;
  }
  ASSERT_GT(ones, 0);
  const WorstCaseAccuracy w = worst_case_accuracy(classifier, test, 84, count, 8);
  const std::vector<int64_t> positions = sweep_positions(84, 28, 8);
  EXPECT_EQ(w.positions, int64_t(positions.size() * positions.size()));
  EXPECT_DOUBLE_EQ(w.worst_case, double(count - ones) / double(count));
  // Wrong cells: each one at each row position where its ink starts below row 40 (every column).
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (test.labels[i].item<int64_t>() != 1) continue;
    const int64_t top = ink_box(test.images[i].to(at::kFloat)).top;
    for (const int64_t y : positions) wrong += (y + top > 40) * int64_t(positions.size());
  }
  const double cells = double(count) * double(w.positions);
  EXPECT_NEAR(w.mean_accuracy, 1.0 - double(wrong) / cells, 1e-12);
  const double sure = std::exp(5.0) / (std::exp(5.0) + 9.0), unsure = 1.0 / (std::exp(5.0) + 9.0);
  EXPECT_NEAR(w.true_probability, (sure * (cells - double(wrong)) + unsure * double(wrong)) / cells, 1e-9);
}

TEST(ShiftMetrics, WorstCaseMeansAgreeWithTheTranslationSweep) {
  ASSERT_FALSE(mnist_dir().empty());
  ViTConfig c = preset_config("tiny", "attention");
  c.image_height = c.image_width = 48;
  c.patch = 8;
  c.depth = 1;
  c.dim = 16;
  c.heads = 2;
  c.head_dim = 8;
  c.mlp_dim = 16;
  at::manual_seed(11);
  ViT model(c);
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  const EngineOptions engine;
  model->train();  // the measurements read it in evaluation mode and give its mode back
  const WorstCaseAccuracy w = worst_case_accuracy(classifier_of(engine, model, c10::kCPU), test, 48, 16, 5);
  EXPECT_TRUE(model->is_training());
  const auto stop = [](int64_t, int64_t) { throw Error("stopped"); };
  EXPECT_THROW(translation_sweep(engine, model, test, {16, 5}, c10::kCPU, stop), Error);
  EXPECT_TRUE(model->is_training());
  const SweepResult sweep = translation_sweep(engine, model, test, {16, 5}, c10::kCPU);
  EXPECT_NEAR(w.mean_accuracy, sweep.accuracy.mean().item<double>(), 1e-12);
  EXPECT_NEAR(w.true_probability, sweep.true_probability.mean().item<double>(), 1e-6);
  EXPECT_LE(w.worst_case, sweep.accuracy.min().item<double>());
}

ViT unmixed_model(bool position_embedding) {
  ViTConfig c = preset_config("tiny", "attention");
  c.image_height = c.image_width = 60;
  c.patch = 12;
  c.depth = 2;
  c.dim = 32;
  c.heads = 2;
  c.head_dim = 16;
  c.mlp_dim = 32;
  c.position_embedding = position_embedding;
  at::manual_seed(5);
  ViT model(c);
  at::NoGradGuard no_grad;
  for (auto& p : model->named_parameters())  // no attention output: no token reads another
    if (p.key().find("attention.to_out") != std::string::npos) p.value().zero_();
  return model;
}

TEST(ShiftMetrics, TokensThatNeverMixAreEquivariantAndAnAbsolutePositionBreaksIt) {
  ASSERT_FALSE(mnist_dir().empty());
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  const std::vector<LayerEquivariance> unmixed =
      token_equivariance(EngineOptions{}, unmixed_model(false), test, {24, 1, 2}, c10::kCPU);
  ASSERT_EQ(unmixed.size(), 3u);
  EXPECT_EQ(unmixed[0].layer, "embedding");
  EXPECT_EQ(unmixed[2].layer, "block 2");
  for (const LayerEquivariance& l : unmixed) {
    EXPECT_LT(l.tokens, 1e-5) << l.layer;
    EXPECT_LT(l.cls, 1e-5) << l.layer;
  }
  const std::vector<LayerEquivariance> absolute =
      token_equivariance(EngineOptions{}, unmixed_model(true), test, {24, 1, 2}, c10::kCPU);
  for (const LayerEquivariance& l : absolute) {
    EXPECT_GT(l.tokens, 0.05) << l.layer;
    EXPECT_LT(l.cls, 1e-5) << l.layer;  // the CLS token still reads only itself
  }
  EXPECT_THROW(token_equivariance(EngineOptions{}, unmixed_model(false), test, {24, 2, 2}, c10::kCPU),
               Error);  // 5 x 5 grid, r = 2
}

}  // namespace
}  // namespace translution
