// The engine's small-product kernel (cpu/avx512_gemm.h): every register block shape
// against a double-precision product, inside wider rows; where its prefetches
// go; then a float Translution layer whose relative products run on it (or, on a
// CPU without AVX-512, on the BLAS), against the per-pair reference.
#include "cpu/avx512_gemm.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "cpu/helper_threads.h"
#include "cpu/kernel_observer.h"
#include "cpu/pair_projection.h"
#include "naive_attention.h"
#include "nn/attention.h"
#include "nn/relative_projection.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "util/error.h"

namespace translution {
namespace {

using test_support::max_relative_error;

class Avx512Gemm : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_AVX512_KERNEL(avx512_gemm_available()); }
};

// c = a b (avx512_gemm) for a [m x k] in rows of lda, or c = a^T b (avx512_gemm_at) for
// a stored [k x m]; b [k x n] in rows of ldb; written into rows of ldc starting 3
// columns in. Returns the worst error relative to the sum of |a||b| over k (float
// rounding scales with it), and checks that no other column of the output rows
// was touched.
double worst_error(int64_t m, int64_t n, int64_t k, bool transposed_a = false) {
  const at::Tensor wide_a = transposed_a ? at::randn({k, m + 5}) : at::randn({m, k + 3});
  const at::Tensor a = transposed_a ? wide_a.narrow(1, 1, m) : wide_a.narrow(1, 2, k);
  const at::Tensor wide_b = at::randn({k, n + 16}), b = wide_b.narrow(1, 16, n);
  at::Tensor wide_c = at::full({m, n + 5}, 42.0f);
  if (transposed_a)
    avx512_gemm_at(m, n, k, a.data_ptr<float>(), a.stride(0), b.data_ptr<float>(), b.stride(0),
                   wide_c.data_ptr<float>() + 3, wide_c.stride(0));
  else
    avx512_gemm(m, n, k, a.data_ptr<float>(), a.stride(0), b.data_ptr<float>(), b.stride(0),
                wide_c.data_ptr<float>() + 3, wide_c.stride(0));
  EXPECT_TRUE(wide_c.narrow(1, 0, 3).eq(42.0f).all().item<bool>()) << "columns left of c were written";
  EXPECT_TRUE(wide_c.narrow(1, 3 + n, 2).eq(42.0f).all().item<bool>()) << "columns right of c were written";
  const at::Tensor ad = transposed_a ? a.to(at::kDouble).t() : a.to(at::kDouble), bd = b.to(at::kDouble);
  const at::Tensor error = (wide_c.narrow(1, 3, n).to(at::kDouble) - at::mm(ad, bd)).abs();
  return (error / (at::mm(ad.abs(), bd.abs()) + 1e-30)).max().item<double>();
}

// 1-40 rows cover every block height (1-12) and 2-4 blocks of unequal heights;
// 16 and 48 columns end in a one-vector strip, 1, 8, 24 and 41 in a masked
// partial vector (LoR's 24-wide matrices); at most 6 rows sweep 64-column strips
// (64; 88 and 136 end in a masked strip after them, 112 in a 32- and a 16-column one);
// k = 1 has a single step.
TEST_F(Avx512Gemm, MatchesTheDoubleProductForEveryBlockShape) {
  at::manual_seed(5);
  for (int64_t m = 1; m <= 40; ++m)
    for (const int64_t n : {1, 8, 16, 24, 41, 48, 64, 88, 112, 136})
      for (const int64_t k : {1, 7, 33}) {
        SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k));
        EXPECT_LT(worst_error(m, n, k), 1e-5);
      }
  // k = 0: an empty sum, so zeros.
  const at::Tensor a = at::empty({3, 0}), b = at::empty({0, 16});
  at::Tensor c = at::full({3, 16}, 42.0f);
  avx512_gemm(3, 16, 0, a.data_ptr<float>(), 0, b.data_ptr<float>(), 16, c.data_ptr<float>(), 16);
  EXPECT_TRUE(c.eq(0.0f).all().item<bool>());
}

// The prefetch plan never reaches outside the range it is given, and where the
// range is one matrix of the product's shape (what the relative projections
// pass), it prefetches every line of it.
TEST(Avx512GemmPrefetch, StaysInsideTheRangeAndCoversIt) {
  for (const int64_t m : {1, 7, 12, 15, 25, 64})
    for (const int64_t n : {16, 32, 48, 192})
      for (const int64_t k : {1, 3, 24, 192})
        for (const int64_t matrices : {0, 1, 4}) {
          for (const int64_t extra : {-1, 0, 1}) {
            const int64_t bytes = std::max<int64_t>(0, matrices * k * n * 4 + extra * 97);
            const Avx512GemmPrefetch plan = avx512_gemm_prefetch(m, n, k, bytes);
            SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) +
                         ", " + std::to_string(bytes) + " bytes");
            ASSERT_EQ(plan.blocks, (m + 11) / 12 * ((n + 31) / 32));
            ASSERT_GE(plan.per_step, 0);
            ASSERT_LE(plan.per_step, 2);
            if (plan.per_step == 0) {
              EXPECT_LT(plan.lines, k) << "lines enough to spread over the steps, yet none prefetched";
              continue;
            }
            std::vector<bool> covered(size_t(plan.lines), false);
            for (int64_t block = 0; block < plan.blocks; ++block) {
              const int64_t first = plan.first_line(block, k), last = first + plan.per_step * k;
              ASSERT_GE(first, 0) << "block " << block;
              ASSERT_LE(last, plan.lines) << "block " << block;
              for (int64_t line = first; line < last; ++line) covered[size_t(line)] = true;
            }
            if (matrices == 1 && extra == 0) {
              EXPECT_EQ(std::count(covered.begin(), covered.end(), false), 0) << "lines never prefetched";
            }
          }
        }
}

// Prefetching reads ahead but never uses what it reads: the result is the same
// bit for bit with any range.
TEST_F(Avx512Gemm, PrefetchingAnyRangeChangesNothing) {
  for (const auto& [m, n] : {std::pair<int64_t, int64_t>{15, 192}, {1, 16}, {3, 192}, {6, 88}}) {
    const int64_t k = 192;
    const at::Tensor a = at::randn({m, k}), b = at::randn({k, n}), next = at::randn({16 * k, n});
    at::Tensor plain = at::empty({m, n}), with_next = at::empty({m, n});
    avx512_gemm(m, n, k, a.data_ptr<float>(), k, b.data_ptr<float>(), n, plain.data_ptr<float>(), n);
    // none; fewer lines than steps; between one and two per step; one matrix; four
    for (const int64_t bytes : {int64_t(1), int64_t(64 * 5), 64 * k * 3 / 2, 4 * k * n, 16 * k * n}) {
      avx512_gemm(m, n, k, a.data_ptr<float>(), k, b.data_ptr<float>(), n, with_next.data_ptr<float>(), n,
                  next.data_ptr<float>(), std::min<int64_t>(bytes, next.numel() * 4));
      EXPECT_TRUE(with_next.equal(plain)) << m << " x " << n << ", " << bytes << " bytes prefetched";
    }
    EXPECT_LT((plain - at::mm(a, b)).abs().max().item<double>(), 1e-3);
  }
}

// The weight gradients' kernel: 1-30 output rows (every block height, and two or
// three blocks), widths ending in a masked vector (1, 8, 24 as LoR's, 41) or a
// whole one (16, 32, 48), k from one step to a batch's 464 rows; k = 0 gives zeros.
TEST_F(Avx512Gemm, TransposedProductMatchesTheDoubleProduct) {
  at::manual_seed(6);
  for (int64_t m = 1; m <= 30; ++m)
    for (const int64_t n : {1, 8, 16, 24, 32, 41, 48})
      for (const int64_t k : {1, 9, 464}) {
        SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k));
        EXPECT_LT(worst_error(m, n, k, true), 1e-5);
      }
  const at::Tensor a = at::empty({0, 3}), b = at::empty({0, 16});
  at::Tensor c = at::full({3, 16}, 42.0f);
  avx512_gemm_at(3, 16, 0, a.data_ptr<float>(), 3, b.data_ptr<float>(), 16, c.data_ptr<float>(), 16);
  EXPECT_TRUE(c.eq(0.0f).all().item<bool>());
}

TEST_F(Avx512Gemm, RefusesAProductWithoutColumnsAndTheReferenceNeverAsksForIt) {
  EXPECT_FALSE(avx512_gemm_width_ok(0));
  EXPECT_TRUE(avx512_gemm_width_ok(24));
  const at::Tensor a = at::randn({3, 4}), b = at::randn({4, 1});
  at::Tensor c = at::empty({3, 1});
  EXPECT_THROW(avx512_gemm(3, 0, 4, a.data_ptr<float>(), 4, b.data_ptr<float>(), 1, c.data_ptr<float>(), 1),
               Error);
  // The reference options keep the relative products on LibTorch's ops: the
  // projection's door declines them (FloatLayerMatchesTheReference below sees
  // that no kernel runs in a whole layer under them).
  const at::Tensor xt = at::randn({4, 2, 8}), bank = at::randn({2, 8, 8});
  const at::Tensor rows = at::arange(4, at::kLong);
  const std::vector<int64_t> offset{0, 2, 4};
  EXPECT_TRUE(sorted_projection(EngineOptions{}, xt, rows, bank, offset, false, nullptr).defined());
  EXPECT_FALSE(
      sorted_projection(test_support::reference_options(), xt, rows, bank, offset, false, nullptr).defined());
}

// A relative layer in float, with the relative products on the kernels (where the
// CPU has them) and on the BLAS, the matrices claimed by one to three threads,
// batch 1, 2 and 8 (products of up to 96 rows): forward and every gradient within
// float rounding of the per-pair reference in double. Narrow banks (at most 32 x
// 32: Translution's 8 -> 16 here, LoR's relative encodings, whose products end in
// a masked partial vector) stay on the kernels forward and backward however many
// rows; a wider bank (Translution's 40 -> 40, as its real 192 x 192) takes the
// kernel only for products of at most 64 rows, forward. On one thread the test
// also sees which kernels ran, in both directions.
struct LayerCase {
  std::string model;
  AttentionShape shape;
  bool narrow;
};
class Avx512GemmLayer : public ::testing::TestWithParam<LayerCase> {};
TEST_P(Avx512GemmLayer, FloatLayerMatchesTheReference) {
  const KernelCounts kernels;  // the kernels this test enters
  const AttentionSpec spec = attention_choice(GetParam().model).spec;
  const AttentionShape shape = GetParam().shape;
  const bool narrow = GetParam().narrow;
  const TokenLayout layout = TokenLayout::grid(3, 4, true);
  at::manual_seed(9);
  auto module = make_attention(spec, shape, layout);
  const EngineOptions per_matrix =
      with(EngineOptions{}, &EngineOptions::projection, ProjectionAlgorithm::PerMatrix);
  const bool has_kernel = avx512_gemm_available();
  for (const int64_t batch : {1, 2, 8}) {
    const at::Tensor x = at::randn({batch, layout.tokens(), shape.dim});
    const at::Tensor probe = at::randn({batch, layout.tokens(), shape.dim});
    module->to(at::kDouble);
    const at::Tensor xd = x.to(at::kDouble).requires_grad_(true);
    const at::Tensor naive = test_support::naive_attention(*module, spec, shape, layout, xd);
    std::vector<at::Tensor> inputs_d{xd};
    for (const auto& p : module->parameters()) inputs_d.push_back(p);
    const auto grad_naive = torch::autograd::grad({(naive * probe.to(at::kDouble)).sum()}, inputs_d);
    module->to(at::kFloat);
    for (const bool kernel : {true, false}) {
      if (kernel && !has_kernel) continue;  // no AVX-512: the BLAS cases below still run
      for (const int threads : {1, 2, 3}) {
        SCOPED_TRACE(std::string(kernel ? "kernel" : "BLAS") + ", batch " + std::to_string(batch) + ", " +
                     std::to_string(threads) + " thread(s)");
        // Not the kernel: the reference options, whose products are at::mm's.
        const EngineOptions engine =
            test_support::threads_options(threads, with(per_matrix, &EngineOptions::reference, !kernel));
        const int64_t calls = kernels[Kernel::Avx512Gemm];
        const at::Tensor xf = x.clone().requires_grad_(true);
        const at::Tensor fast = module->forward(engine, xf);
        if (threads == 1 || !kernel) {
          EXPECT_EQ(kernels[Kernel::Avx512Gemm] > calls, kernel) << "kernel ran";
        }
        EXPECT_LT(max_relative_error(fast, naive), 1e-5) << "forward";
        std::vector<at::Tensor> inputs{xf};
        for (const auto& p : module->parameters()) inputs.push_back(p);
        const int64_t forward_calls = kernels[Kernel::Avx512Gemm], at_calls = kernels[Kernel::Avx512GemmAt];
        const auto grad_fast = torch::autograd::grad({(fast * probe).sum()}, inputs);
        if (threads == 1 || !kernel) {
          EXPECT_EQ(kernels[Kernel::Avx512Gemm] > forward_calls, kernel && narrow) << "dG on the kernel";
          EXPECT_EQ(kernels[Kernel::Avx512GemmAt] > at_calls, kernel && narrow) << "dW on the kernel";
        }
        for (size_t i = 0; i < inputs.size(); ++i)
          EXPECT_LT(max_relative_error(grad_fast[i], grad_naive[i]), 1e-4) << "gradient " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RelativeModels, Avx512GemmLayer,
                         ::testing::Values(LayerCase{"translution", {8, 2, 8}, true},
                                           LayerCase{"lor", {8, 2, 8}, true},
                                           LayerCase{"translution", {40, 2, 20}, false}),
                         [](const auto& info) {
                           return info.param.model + (info.param.narrow ? "_narrow" : "_wide");
                         });

}  // namespace
}  // namespace translution
