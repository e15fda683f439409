// Integrated Gradients and occlusion: exact on logits linear in the pixels, and
// complete (the map sums to the logit difference) on a bundled model as the
// path's points grow.
#include "infer/attribution.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "data/canvas_dataset.h"
#include "data/mnist.h"
#include "data/mnist_provision.h"
#include "image/attribution_picture.h"
#include "temp_dir.h"
#include "train/checkpoint.h"
#include "util/engine_options.h"
#include "util/error.h"

namespace translution {
namespace {

// logit_c = sum_p w_cp x_p + b_c on a 10 x 10 canvas (not a multiple of 4), three classes.
struct LinearModel {
  at::Tensor w, b;  // [3, 100], [3]
  LinearModel() {
    at::manual_seed(7);
    w = at::randn({3, 100}, at::kDouble);
    b = at::randn({3}, at::kDouble);
  }
  LogitsFunction logits() const {
    return [w = w, b = b](const at::Tensor& canvases) {  // [B, 10, 10] -> [B, 3]
      return (canvases.to(at::kDouble).flatten(1).matmul(w.t()) + b).to(at::kFloat);
    };
  }
  at::Tensor weights(int64_t c) const { return w[c].view({10, 10}); }
};

at::Tensor linear_canvas() {
  at::manual_seed(11);
  at::Tensor x = at::rand({10, 10});
  x.narrow(0, 0, 4).narrow(1, 0, 4).zero_();  // an ink-free tile for a 4-px occluder
  return x;
}

TEST(Attribution, IntegratedGradientsOfALinearLogitIsWeightTimesInput) {
  const LinearModel m;
  const at::Tensor x = linear_canvas();
  for (const int64_t steps : {1, 3, 32}) {
    IntegratedGradientsOptions o;
    o.target = 1;
    o.steps = steps;
    o.batch = 5;
    const Attribution a = *integrated_gradients(m.logits(), x, o);
    EXPECT_EQ(a.target, 1);
    EXPECT_EQ(a.steps, steps);
    ASSERT_EQ(a.map.sizes(), x.sizes());
    EXPECT_TRUE(at::allclose(a.map.to(at::kDouble), m.weights(1) * x.to(at::kDouble), 1e-5, 1e-5)) << steps;
    EXPECT_NEAR(a.baseline_logits[1].item<double>(), m.b[1].item<double>(), 1e-5);
    EXPECT_NEAR(a.total(), a.logit_difference(), 1e-4);
    EXPECT_LT(a.completeness_gap(), 1e-4);
  }
}

TEST(Attribution, OcclusionOfALinearLogitIsTheTilesWeightedInk) {
  const LinearModel m;
  const at::Tensor x = linear_canvas();
  const at::Tensor contributions = m.weights(2) * x.to(at::kDouble);  // [10, 10]
  for (const int64_t size : {1, 4, 10}) {
    OcclusionOptions o;
    o.target = 2;
    o.occluder = size;
    o.batch = 3;
    const Attribution a = *occlusion(m.logits(), x, o);
    EXPECT_EQ(a.occluder, size);
    for (int64_t y = 0; y < 10; y += size)
      for (int64_t xx = 0; xx < 10; xx += size) {
        const int64_t h = std::min<int64_t>(size, 10 - y), w = std::min<int64_t>(size, 10 - xx);
        const double expected = contributions.narrow(0, y, h).narrow(1, xx, w).sum().item<double>();
        const at::Tensor tile = a.map.narrow(0, y, h).narrow(1, xx, w).to(at::kDouble);
        EXPECT_TRUE(at::allclose(tile, at::full_like(tile, expected), 1e-5, 1e-4))
            << size << " at " << y << "," << xx;
      }
  }
}

TEST(Attribution, ALogitThatIgnoresThePixelsAttributesNothing) {
  const LogitsFunction constant = [](const at::Tensor& canvases) {
    return at::arange(3, at::kFloat).repeat({canvases.size(0), 1});  // [B, 3], no graph back to the canvases
  };
  const LogitsFunction unused = [](const at::Tensor& canvases) {
    return canvases.sum({1, 2}).unsqueeze(1).detach() + at::zeros({1, 3}, at::kFloat);  // [B, 3]
  };
  for (const LogitsFunction& f : {constant, unused}) {
    const Attribution a = *integrated_gradients(f, linear_canvas(), {});
    EXPECT_TRUE(at::equal(a.map, at::zeros({10, 10})));
  }
}

TEST(Attribution, TheDefaultClassIsThePredictedOne) {
  const LinearModel m;
  const at::Tensor x = linear_canvas();
  const at::Tensor logits = m.logits()(x.unsqueeze(0))[0];
  const Attribution a = *integrated_gradients(m.logits(), x, {});
  EXPECT_EQ(a.target, logits.argmax().item<int64_t>());
  EXPECT_NEAR(a.logit(), logits.max().item<double>(), 1e-5);
  OcclusionOptions o;
  o.occluder = 4;
  EXPECT_EQ(occlusion(m.logits(), x, o)->target, a.target);
}

TEST(Attribution, BadValuesAreRefusedByName) {
  const LinearModel m;
  const at::Tensor x = linear_canvas();
  IntegratedGradientsOptions ig;
  ig.steps = 0;
  EXPECT_THROW(integrated_gradients(m.logits(), x, ig), Error);
  ig.steps = 4;
  ig.target = 3;
  try {
    integrated_gradients(m.logits(), x, ig);
    ADD_FAILURE() << "class 3 of 3 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("class 3"), std::string::npos) << e.what();
  }
  OcclusionOptions oc;
  oc.occluder = 0;
  EXPECT_THROW(occlusion(m.logits(), x, oc), Error);
  oc.occluder = 11;
  EXPECT_THROW(occlusion(m.logits(), x, oc), Error);
  EXPECT_THROW(integrated_gradients(m.logits(), x.unsqueeze(0), {}), Error);
}

TEST(Attribution, ProgressCountsTheWorkAndCanStopIt) {
  const LinearModel m;
  const at::Tensor x = linear_canvas();
  std::vector<std::pair<int64_t, int64_t>> calls;
  IntegratedGradientsOptions o;
  o.steps = 10;
  o.batch = 4;
  o.progress = [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
    return true;
  };
  ASSERT_TRUE(integrated_gradients(m.logits(), x, o));
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{4, 10}, {8, 10}, {10, 10}}));
  calls.clear();
  o.progress = [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
    return false;
  };
  EXPECT_FALSE(integrated_gradients(m.logits(), x, o));
  EXPECT_EQ(calls.size(), 1u);
  OcclusionOptions oc;
  oc.occluder = 4;
  oc.batch = 2;
  int occluded = 0, total = 0;
  oc.progress = [&](int64_t done, int64_t all) {
    occluded = int(done);
    total = int(all);
    return true;
  };
  ASSERT_TRUE(occlusion(m.logits(), x, oc));
  EXPECT_EQ(total, 8);  // nine tiles, the top-left one without ink
  EXPECT_EQ(occluded, 8);
}

TEST(Attribution, TheDivergingScaleIsWhiteAtZeroAndSymmetric) {
  const at::Tensor rgb = diverging_ramp(at::tensor({-1.0f, 0.0f, 1.0f, 5.0f}));  // [4, 3]
  EXPECT_TRUE(at::equal(rgb[1], at::full({3}, 247, at::kByte)));
  EXPECT_GT(rgb[0][2].item<int>(), rgb[0][0].item<int>());  // negative: blue
  EXPECT_GT(rgb[2][0].item<int>(), rgb[2][2].item<int>());  // positive: red
  EXPECT_TRUE(at::equal(rgb[2], rgb[3]));                   // clamped
  EXPECT_EQ(symmetric_limit(at::tensor({-3.0f, 0.0f, 2.0f}), 1.0), 3.0);
  EXPECT_NEAR(symmetric_limit(at::tensor({-3.0f, 0.0f, 2.0f}), 0.5), 2.5, 1e-12);  // zeros are not counted
  EXPECT_NEAR(symmetric_limit(at::arange(1, 102, at::kFloat)), 100.0,
              1e-9);  // 101 values: the 99th percentile
  EXPECT_EQ(symmetric_limit(at::zeros({4})), 1.0);
  const at::Tensor picture = attribution_picture(at::zeros({5, 5}), at::zeros({5, 5}), 1, 2, 6);
  EXPECT_EQ(picture.sizes(), (at::IntArrayRef{10, 10 + 4 + 10 + 3 + 6, 3}));
  EXPECT_EQ(attribution_picture(at::zeros({5, 5}), at::zeros({5, 5}), 1, 2).size(1), 10 + 4 + 10 + 6 + 12);
  EXPECT_THROW(attribution_picture(at::zeros({5, 5}), at::zeros({4, 5}), 1, 2), Error);
}

TEST(Attribution, TheCsvHoldsOneLinePerRow) {
  test_support::TempDir dir;
  write_attribution_csv(dir.file("m.csv"), at::tensor({0.5f, -0.0f, 2.0f, -1.25f}).view({2, 2}));
  std::ifstream in(dir.file("m.csv"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "0.5,0\n2,-1.25\n");
  EXPECT_THROW(write_attribution_csv(dir.file("v.csv"), at::zeros({4})), Error);
}

// MNIST's folder (TRANSLUTION_DATA, else the source tree's data/mnist); empty when it lacks the files.
const std::string& digits_dir() {
  static const std::string dir = mnist_dir_complete(default_mnist_dir()) ? default_mnist_dir() : "";
  return dir;
}

// The bundled Translution model and a real test digit, centred as in static MNIST.
struct BundledModel {
  Checkpoint checkpoint = load_checkpoint(TRANSLUTION_SOURCE_ROOT "/resources/models/translution.ckpt");
  at::Tensor canvas;
  int64_t label = -1;
  BundledModel() {
    checkpoint.model->eval();
    const MnistDigits test = load_mnist(digits_dir(), Split::Test);
    canvas = compose_canvas(test.images[0], 84, {28, 28});
    label = test.labels[0].item<int64_t>();
  }
};

TEST(AttributionModel, IntegratedGradientsBecomeCompleteAsTheStepsGrow) {
  if (digits_dir().empty()) GTEST_SKIP() << "no MNIST digits (TRANSLUTION_DATA, data/mnist)";
  const BundledModel m;
  IntegratedGradientsOptions o;
  o.target = m.label;
  std::vector<double> gaps;
  for (const int64_t steps : {8, 64}) {
    o.steps = steps;
    const Attribution a = *integrated_gradients(EngineOptions{}, m.checkpoint.model, c10::kCPU, m.canvas, o);
    EXPECT_TRUE(a.map.isfinite().all().item<bool>());
    EXPECT_TRUE(a.map.masked_select(m.canvas.eq(0)).eq(0).all().item<bool>());  // no ink, nothing attributed
    gaps.push_back(a.completeness_gap());
  }
  EXPECT_LT(gaps[1], gaps[0]);
  EXPECT_LT(gaps[1], 0.01) << "gap at 64 steps";
}

TEST(AttributionModel, TheEngineGivesThePlainPathsGradients) {
  if (digits_dir().empty()) GTEST_SKIP() << "no MNIST digits (TRANSLUTION_DATA, data/mnist)";
  const BundledModel m;
  IntegratedGradientsOptions o;
  o.steps = 4;
  const Attribution engine =
      *integrated_gradients(EngineOptions{}, m.checkpoint.model, c10::kCPU, m.canvas, o);
  const EngineOptions plain = with(EngineOptions{}, &EngineOptions::reference, true);
  const Attribution reference = *integrated_gradients(plain, m.checkpoint.model, c10::kCPU, m.canvas, o);
  EXPECT_EQ(engine.target, reference.target);
  const double scale = reference.map.abs().max().item<double>();
  EXPECT_LT((engine.map - reference.map).abs().max().item<double>(), 1e-3 * scale);
}

TEST(AttributionModel, AnOccludedTileIsWorthTheLogitItTakesAway) {
  if (digits_dir().empty()) GTEST_SKIP() << "no MNIST digits (TRANSLUTION_DATA, data/mnist)";
  const BundledModel m;
  OcclusionOptions o;
  o.target = m.label;
  o.occluder = 12;
  const Attribution a = *occlusion(EngineOptions{}, m.checkpoint.model, c10::kCPU, m.canvas, o);
  EXPECT_EQ(a.map.sizes(), m.canvas.sizes());
  at::Tensor occluded = m.canvas.clone();
  occluded.narrow(0, 36, 12).narrow(1, 36, 12).zero_();  // the centre tile, which the digit covers
  at::NoGradGuard no_grad;
  const LogitsFunction logits = model_logits(EngineOptions{}, m.checkpoint.model, c10::kCPU);
  const double drop = a.logit() - logits(occluded.unsqueeze(0))[0][m.label].item<double>();
  EXPECT_NE(drop, 0);
  EXPECT_NEAR(a.map[40][40].item<double>(), drop, 1e-3 * std::max(1.0, std::abs(drop)));
  EXPECT_TRUE(at::equal(a.map.narrow(0, 0, 12).narrow(1, 0, 12), at::zeros({12, 12})));  // the empty corner
}

}  // namespace
}  // namespace translution
