// A training step's forward and backward split by images over the cores
// (train/forward_backward.h) against the whole batch in one forward.
#include "train/forward_backward.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/bf16_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/linear.h"
#include "nn/vit.h"
#include "tensor_checks.h"
#include "test_switches.h"

namespace translution {
namespace {

struct Pass {
  ForwardBackward result;
  std::vector<at::Tensor> grads;  // every parameter's, in order (undefined: none)
};

// One step's forward and backward under `engine` (the defaults where not given).
Pass run(ViT& vit, const at::Tensor& images, const at::Tensor& labels, int shares,
         const EngineOptions& engine = {}) {
  for (at::Tensor& p : vit->parameters()) p.mutable_grad() = at::Tensor();
  Pass pass;
  pass.result = forward_backward(engine, vit, images, labels, shares);
  for (const at::Tensor& p : vit->parameters())
    pass.grads.push_back(p.grad().defined() ? p.grad().clone() : p.grad());
  return pass;
}

// A small model in double precision, and a batch of `n` random images with labels.
ViT double_model(const std::string& name) {
  ViT vit(test_support::small_vit_config(name));
  vit->to(at::kDouble);
  return vit;
}
std::pair<at::Tensor, at::Tensor> random_batch(int64_t n) {
  return {at::randn({n, 1, 28, 21}, at::kDouble), at::randint(10, {n}, at::kLong)};
}

void expect_same(const Pass& tested, const Pass& whole, ViT& vit, double tolerance) {
  EXPECT_NEAR(tested.result.loss, whole.result.loss, tolerance * std::abs(whole.result.loss)) << "loss";
  EXPECT_LT(test_support::max_relative_error(tested.result.logits, whole.result.logits), tolerance)
      << "logits";
  const auto names = vit->named_parameters();
  ASSERT_EQ(tested.grads.size(), whole.grads.size());
  for (size_t n = 0; n < whole.grads.size(); ++n) {
    ASSERT_EQ(tested.grads[n].defined(), whole.grads[n].defined()) << names[n].key();
    if (whole.grads[n].defined()) {
      EXPECT_LT(test_support::max_relative_error(tested.grads[n], whole.grads[n]), tolerance)
          << names[n].key();
    }
  }
}

// In double, shares of an odd batch (2 and 3 images, three of 1-2) give the whole
// batch's mean loss, its logits and every parameter's gradient: they differ only
// in the order of the per-image sums.
TEST(BatchSplit, SharesGiveTheWholeBatchsLossLogitsAndGradients) {
  for (const std::string model : {"attention", "translution", "lor", "rel-bias", "rope", "gpsa"}) {
    SCOPED_TRACE(model);
    ViTConfig c = test_support::small_vit_config(model);
    if (model == "rope") {  // a hybrid
      c.first_blocks = 1;
      c.first_model = "translution";
    }
    at::manual_seed(3);
    ViT vit(c);
    vit->to(at::kDouble);
    vit->train();
    const at::Tensor images = at::randn({5, 1, 28, 21}, at::kDouble);
    const at::Tensor labels = at::randint(10, {5}, at::kLong);
    const Pass whole = run(vit, images, labels, 1);
    EXPECT_GT(whole.result.loss, 0);
    const Pass two = run(vit, images, labels, 2), three = run(vit, images, labels, 3);
    EXPECT_EQ(whole.result.threads, 1);
    EXPECT_EQ(two.result.threads, 2) << "each share on a thread of its own";
    EXPECT_EQ(three.result.threads, 3);
    expect_same(two, whole, vit, 1e-12);
    expect_same(three, whole, vit, 1e-12);
  }
}

TEST(BatchSplit, ABatchSmallerThanTheSharesTakesFewer) {
  ViT vit(test_support::small_vit_config("lor"));
  vit->to(at::kDouble);
  const at::Tensor images = at::randn({1, 1, 28, 21}, at::kDouble);
  const at::Tensor labels = at::zeros({1}, at::kLong);
  const Pass whole = run(vit, images, labels, 1);
  expect_same(run(vit, images, labels, 4), whole, vit, 1e-12);
}

// Gradients are added to what the parameters hold, as backward does.
TEST(BatchSplit, GradientsAccumulateIntoWhatIsThere) {
  ViT vit = double_model("translution");
  const auto batch = random_batch(4);
  const at::Tensor &images = batch.first, &labels = batch.second;
  const Pass once = run(vit, images, labels, 2);
  forward_backward(EngineOptions{}, vit, images, labels, 2);  // on top of the gradients `run` left
  const auto params = vit->parameters();
  for (size_t n = 0; n < params.size(); ++n)
    if (once.grads[n].defined()) {
      EXPECT_LT(test_support::max_relative_error(params[n].grad(), 2 * once.grads[n]), 1e-12);
    }
}

// Called inside another split (the helpers taken), the shares run one after
// another on the calling thread, with the same result.
TEST(BatchSplit, InsideAnotherSplitTheSharesRunInTurn) {
  ViT vit = double_model("attention");
  const auto batch = random_batch(4);
  const at::Tensor &images = batch.first, &labels = batch.second;
  const Pass whole = run(vit, images, labels, 1);
  Pass nested;
  run_parts(2, [&](int part) {
    if (part == 0) nested = run(vit, images, labels, 2);
  });
  EXPECT_EQ(nested.result.threads, 1);
  expect_same(nested, whole, vit, 1e-12);
}

// A share's failure reaches the caller (here the second share's label is out of range).
TEST(BatchSplit, AShareErrorReachesTheCaller) {
  ViT vit(test_support::small_vit_config("attention"));
  const at::Tensor images = at::randn({4, 1, 28, 21});
  const at::Tensor labels = at::tensor({1, 2, 3, 99}, at::kLong);
  EXPECT_ANY_THROW(forward_backward(EngineOptions{}, vit, images, labels, 2));
  const at::Tensor fine = at::tensor({1, 2, 3, 4}, at::kLong);
  EXPECT_NO_THROW(forward_backward(EngineOptions{}, vit, images, fine, 2))
      << "the helpers still serve after a failed share";
}

// A share whose loss is not finite runs no backward: no NaN reaches a gradient,
// and the batch's loss says what happened.
TEST(BatchSplit, ANonFiniteShareLeavesNoNanGradient) {
  ViT vit(test_support::small_vit_config("lor"));
  at::Tensor images = at::randn({4, 1, 28, 21});
  images[3].fill_(std::numeric_limits<float>::quiet_NaN());
  const at::Tensor labels = at::randint(10, {4}, at::kLong);
  for (const int shares : {1, 2}) {
    SCOPED_TRACE(shares);
    const Pass pass = run(vit, images, labels, shares);
    EXPECT_TRUE(std::isnan(pass.result.loss));
    for (const at::Tensor& g : pass.grads) {
      if (g.defined()) {
        EXPECT_TRUE(at::isfinite(g).all().item<bool>());
      }
    }
  }
}

// The caller's precision reaches the shares, which may run on other threads:
// split bf16 steps match the whole batch's bf16 step, not the fp32 one.
TEST(BatchSplit, SharesRunInTheCallersPrecision) {
  SKIP_WITHOUT_BF16_PRODUCTS();
  at::manual_seed(5);
  ViT vit(test_support::small_vit_config("attention"));
  const at::Tensor images = at::randn({6, 1, 28, 21});
  const at::Tensor labels = at::randint(10, {6}, at::kLong);
  const EngineOptions bf16 = with(EngineOptions{}, &EngineOptions::precision, DensePrecision::Bf16);
  const Pass fp32 = run(vit, images, labels, 1);
  const Pass whole = run(vit, images, labels, 1, bf16);
  const Pass split = run(vit, images, labels, 2, bf16);
  EXPECT_GT(test_support::max_relative_error(whole.result.logits, fp32.result.logits), 1e-5) << "bf16 rounds";
  EXPECT_LT(test_support::max_relative_error(split.result.logits, whole.result.logits), 1e-6);
}

// Each share of a split step computes under its caller's options with
// matrix_threads = 1: every split the engine makes of its work is one part.
TEST(OneCoreShare, OptionsOfOneThreadMakeEverySplitOnePart) {
  const EngineOptions one = test_support::threads_options(1);
  EXPECT_EQ(matrix_threads(one), 1);
  EXPECT_EQ(product_parts(one, int64_t(1) << 30), 1);
  EXPECT_EQ(product_parts(one, 1000), 1) << "not even the small products the defaults split in two";
  EXPECT_EQ(element_parts(one), 1);
  EXPECT_EQ(element_grain(one, 4096), 1);
  EXPECT_EQ(bf16_run(one).parts, 1);
  EXPECT_EQ(linear_parts(one, 1600, 576, 192), 1);
  // The defaults decide by shape and the machine: the element-wise work takes the free cores.
  EXPECT_EQ(matrix_threads(EngineOptions{}), 0);
  EXPECT_EQ(element_parts(EngineOptions{}), free_cores());
}

}  // namespace
}  // namespace translution
