// One image's dense products on the engine's row kernel (cpu/transposed_weights.h):
// the strip layout, when a copy is made again and when it is reused, and dense
// layers (plain, GELU and residual epilogues, several layers at once) against
// the BLAS path in double and float. Skipped where the row kernel cannot run.
#include "cpu/transposed_weights.h"

#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include "cpu/avx512_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/kernel_observer.h"
#include "cpu/linear.h"
#include "tensor_checks.h"
#include "test_switches.h"

namespace translution {
namespace {

using test_support::max_relative_error;

TEST(TransposedWeights, StripsHoldTheTransposedColumns) {
  const at::Tensor w = at::randn({96, 40});
  const at::Tensor t = transposed_weight(w);
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{3, 40, 32}));
  for (int64_t s = 0; s < 3; ++s) EXPECT_TRUE(at::equal(t[s], w.narrow(0, 32 * s, 32).t())) << "strip " << s;
  EXPECT_FALSE(transposed_weight(at::randn({10, 40})).defined()) << "10 outputs: no whole strip";
  EXPECT_FALSE(transposed_weight(at::randn({64, 40}, at::kDouble)).defined()) << "double stays on the BLAS";
  EXPECT_FALSE(transposed_weight(at::randn({40, 64}).t()).defined()) << "not contiguous";
}

TEST(TransposedWeights, MadeOnceAndAgainWhenTheWeightChanges) {
  at::Tensor w = at::randn({64, 24});
  const at::Tensor first = transposed_weight(w);
  const at::Tensor first_values = first.clone();
  const int64_t made = transposed_weights_made();
  EXPECT_TRUE(transposed_weight(w).is_same(first)) << "reused while unchanged";
  EXPECT_EQ(transposed_weights_made(), made);
  {
    at::NoGradGuard no_grad;
    w.mul_(2);  // an in-place change moves the version counter
  }
  const at::Tensor second = transposed_weight(w);
  EXPECT_EQ(transposed_weights_made(), made + 1);
  EXPECT_TRUE(at::equal(second[0], w.narrow(0, 0, 32).t())) << "the copy follows the weight";
  w.set_data(at::randn({64, 24}));  // new memory, same tensor
  EXPECT_TRUE(at::equal(transposed_weight(w)[1], w.narrow(0, 32, 32).t()));
  EXPECT_EQ(transposed_weights_made(), made + 2);
  EXPECT_TRUE(at::equal(first, first_values)) << "a copy handed out stays valid after the cache replaced it";
}

TEST(TransposedWeights, CopiesOfWeightsThatAreGoneAreDropped) {
  { transposed_weight(at::randn({32, 8})); }  // its weight is gone once the statement ends
  const int64_t before = transposed_weights_cached();
  const at::Tensor kept = at::randn({32, 8});
  transposed_weight(kept);  // a new copy sweeps the dead ones
  EXPECT_LE(transposed_weights_cached(), before) << "the dead weight's copy went, the new one came";
}

TEST(TransposedWeights, ConcurrentCallersGetTheSameCopy) {
  const at::Tensor w = at::randn({128, 64});
  const int64_t made = transposed_weights_made();
  std::vector<at::Tensor> got(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { got[size_t(i)] = transposed_weight(w); });
  for (auto& t : threads) t.join();
  for (const at::Tensor& t : got) EXPECT_TRUE(t.is_same(got[0])) << "one copy, shared";
  EXPECT_EQ(transposed_weights_made(), made + 1);
}

class OneImageDense : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_AVX512_KERNEL(avx512_gemm_available()); }
  // The layer's output run(options) with the row kernel (under `engine`), against
  // the BLAS path (row kernel off: `engine`'s reference options).
  template <typename F>
  static void expect_same(const EngineOptions& engine, F run, double tolerance) {
    const at::Tensor kernel = run(engine);
    const at::Tensor blas = run(test_support::reference_options(engine));
    EXPECT_LT(max_relative_error(kernel, blas.to(at::kDouble)), tolerance);
  }
};

// Widths of whole strips, parts that start inside a strip (672 in two parts: the
// second starts at 336, 16 columns into a strip), 10 outputs (no whole strip: no
// copy, the BLAS both ways); 1-3 matrix threads. On one thread the row kernel
// must have run (and not with it off).
TEST_F(OneImageDense, MatchesTheBlasPathForEveryEpilogue) {
  const KernelCounts kernels;  // the kernels this test enters
  at::manual_seed(12);
  at::NoGradGuard no_grad;
  for (const int threads : {1, 2, 3})
    for (const int64_t out : {int64_t(32), int64_t(192), int64_t(672), int64_t(10)}) {
      SCOPED_TRACE(std::to_string(out) + " outputs, " + std::to_string(threads) + " thread(s)");
      const EngineOptions engine = test_support::threads_options(threads);
      torch::nn::Linear layer(torch::nn::LinearOptions(64, out));
      const at::Tensor x = at::randn({1, 50, 64});
      const at::Tensor residual = at::randn({1, 50, out});
      if (threads == 1 && out % 32 == 0) {
        const int64_t calls = kernels[Kernel::Avx512Gemm];
        linear(engine, layer, x);
        EXPECT_GT(kernels[Kernel::Avx512Gemm], calls) << "the row kernel ran";
        const int64_t off = kernels[Kernel::Avx512Gemm];
        linear(test_support::reference_options(engine), layer, x);
        EXPECT_EQ(kernels[Kernel::Avx512Gemm], off) << "not under the reference options";
      }
      expect_same(
          engine, [&](const EngineOptions& o) { return linear(o, layer, x); }, 1e-5);
      expect_same(
          engine, [&](const EngineOptions& o) { return linear_gelu(o, layer, x); }, 1e-5);
      expect_same(
          engine, [&](const EngineOptions& o) { return linear_add(o, layer, x, residual); }, 1e-5);
      // Against the module in double: the products themselves, not only their agreement.
      torch::nn::Linear reference(torch::nn::LinearOptions(64, out));
      reference->to(at::kDouble);
      reference->weight.copy_(layer->weight);
      reference->bias.copy_(layer->bias);
      EXPECT_LT(max_relative_error(linear(engine, layer, x), reference->forward(x.to(at::kDouble))), 1e-5);
    }
}

// The copy follows the weight through the changes a run makes, and a forward
// that records gradients never makes one.
TEST_F(OneImageDense, FollowsTheWeightAndStaysOutOfTraining) {
  at::manual_seed(14);
  const EngineOptions engine = test_support::threads_options(1);
  torch::nn::Linear layer(torch::nn::LinearOptions(64, 96));
  const at::Tensor x = at::randn({1, 50, 64});
  auto no_grad_dense = [&] {
    at::NoGradGuard no_grad;
    return linear(engine, layer, x);
  };
  no_grad_dense();
  {
    at::NoGradGuard no_grad;
    layer->weight.mul_(-0.5);  // an optimizer-like in-place step
  }
  EXPECT_LT(max_relative_error(no_grad_dense(), layer->forward(x).detach().to(at::kDouble)), 1e-5);
  layer->weight.set_data(at::randn({96, 64}));  // new memory
  EXPECT_LT(max_relative_error(no_grad_dense(), layer->forward(x).detach().to(at::kDouble)), 1e-5);
  const int64_t made = transposed_weights_made();
  const at::Tensor with_grad = linear(engine, layer, x);
  EXPECT_TRUE(with_grad.requires_grad());
  EXPECT_EQ(transposed_weights_made(), made) << "a forward with gradients made a copy";
}

TEST_F(OneImageDense, SeveralLayersAtOnce) {
  at::manual_seed(13);
  at::NoGradGuard no_grad;
  // LoR's six projections: 192-wide layers beside 24-wide ones, so part boundaries fall inside strips.
  std::vector<torch::nn::Linear> owned;
  for (const int64_t out : {192, 24, 192, 24, 192, 24})
    owned.emplace_back(torch::nn::LinearOptions(64, out).bias(false));
  std::vector<torch::nn::Linear*> layers;
  for (auto& l : owned) layers.push_back(&l);
  const at::Tensor x = at::randn({1, 50, 64});
  for (const int threads : {1, 2}) {
    const EngineOptions engine = test_support::threads_options(threads);
    const std::vector<at::Tensor> kernel = linear_each(engine, layers, x);
    const std::vector<at::Tensor> blas = linear_each(test_support::reference_options(engine), layers, x);
    for (size_t i = 0; i < layers.size(); ++i) {
      EXPECT_LT(max_relative_error(kernel[i], blas[i].to(at::kDouble)), 1e-5) << "layer " << i;
      EXPECT_LT(max_relative_error(kernel[i], owned[i]->forward(x).to(at::kDouble)), 1e-5) << "layer " << i;
    }
  }
}

}  // namespace
}  // namespace translution
