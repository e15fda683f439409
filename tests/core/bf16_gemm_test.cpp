// The bfloat16 products (cpu/bf16_gemm.h) against a double-precision product of
// the same operands rounded to bfloat16 (so only the fp32 sums may differ):
// every transposition, shapes that fill no tile and leave partial ones, row
// strides wider than the rows, 1-3 parts, with and without a bias row; the rounding against its definition;
// dense layers in bf16 mode, forward and both gradients, against the same
// rounded reference, and the layers left in fp32 where bf16 must not apply;
// Translution's offset-matrix products against the naive reference on rounded
// operands; a small ViT trains in bf16 mode. The products run on both kernels
// where the CPU has AMX tiles (tiles, and AVX512-BF16 with them switched off), on
// AVX512-BF16 where it has only that. Skipped where it has neither.
#include "cpu/bf16_gemm.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/linear.h"
#include "naive_attention.h"
#include "nn/attention.h"
#include "nn/vit.h"
#include "test_switches.h"
#include "util/error.h"

namespace translution {
namespace {

#define SKIP_WITHOUT_TILES() SKIP_WITHOUT_BF16_PRODUCTS()

// Runs check(tiles) on every bfloat16 kernel this CPU has (tiles: whether the
// products ask for the AMX tiles), naming it on failure.
template <typename Check>
void on_each_kernel(Check check) {
  const bool has_tiles = std::string(bf16_gemm_kernel(true)) == "amx";
  for (const bool tiles : {true, false}) {
    if (!tiles && !has_tiles) break;
    SCOPED_TRACE(bf16_gemm_kernel(tiles));
    check(tiles);
  }
}

at::Tensor rounded(const at::Tensor& t) {
  at::Tensor f = t.to(at::kFloat).contiguous().clone();
  float* p = f.data_ptr<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = round_to_bf16(p[i]);
  return f.to(at::kDouble);
}

// Largest |got - want| relative to want's largest entry.
double relative_error(const at::Tensor& got, const at::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  return (got.to(at::kDouble) - want).abs().max().item<double>() / (scale > 0 ? scale : 1);
}

TEST(Bf16Gemm, RoundingFollowsItsDefinition) {
  const auto bits = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  };
  const auto from = [](uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
  };
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  EXPECT_EQ(bits(round_to_bf16(from(0x3F808000u))), 0x3F800000u);  // tie, even below: down
  EXPECT_EQ(bits(round_to_bf16(from(0x3F818000u))), 0x3F820000u);  // tie, odd below: up
  EXPECT_EQ(bits(round_to_bf16(from(0x3F808001u))), 0x3F810000u);  // above the tie: up
  EXPECT_EQ(bits(round_to_bf16(from(0x3F807FFFu))), 0x3F800000u);  // below the tie: down
  EXPECT_EQ(bits(round_to_bf16(-0.0f)), 0x80000000u);
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to_bf16(from(0x7F800001u))));  // a NaN whose rounding would carry into Inf
  EXPECT_EQ(bits(round_to_bf16(from(0x00000001u))), 0u);      // subnormals flush to zero
  EXPECT_EQ(bits(round_to_bf16(from(0x80400000u))), 0x80000000u);
  // Relative error at most half a unit in the 8-bit significand.
  for (float x = 1e-30f; x < 1e30f; x *= 1.37f)
    EXPECT_LE(std::abs(round_to_bf16(x) - x), x * std::ldexp(1.0, -8));
}

// c = op(a) op(b) (+ a bias row where `bias`) through bf16_gemm, in a wider c whose
// extra columns must stay untouched.
void check_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Bf16Run run, bool bias = false) {
  const int64_t pad = 3;
  const at::Tensor a = ta ? at::randn({k, m + pad}) : at::randn({m, k + pad});
  const at::Tensor b = tb ? at::randn({n, k + pad}) : at::randn({k, n + pad});
  const at::Tensor row = at::randn({n});
  at::Tensor c = at::full({m, n + pad}, 7.0f);
  bf16_gemm(ta, tb, m, n, k, a.data_ptr<float>(), a.size(1), b.data_ptr<float>(), b.size(1),
            c.data_ptr<float>(), n + pad, run, bias ? row.data_ptr<float>() : nullptr);
  const at::Tensor opa = ta ? a.narrow(1, 0, m).t() : a.narrow(1, 0, k);
  const at::Tensor opb = tb ? b.narrow(1, 0, k).t() : b.narrow(1, 0, n);
  const at::Tensor added =
      bias ? row.to(at::kDouble) : at::zeros({n}, at::kDouble);  // the bias is not rounded
  const at::Tensor want = at::mm(rounded(opa), rounded(opb)) + added;
  const at::Tensor exact_fp32 = at::mm(opa.to(at::kDouble), opb.to(at::kDouble)) + added;
  SCOPED_TRACE(testing::Message() << "trans " << ta << tb << " m " << m << " n " << n << " k " << k
                                  << " parts " << run.parts << " bias " << bias);
  // Against the rounded operands only the fp32 sums differ; against the unrounded ones bf16's rounding shows.
  EXPECT_LT(relative_error(c.narrow(1, 0, n), want), 2e-6);
  EXPECT_LT(relative_error(c.narrow(1, 0, n), exact_fp32), 3e-2);
  EXPECT_TRUE(at::all(c.narrow(1, n, pad) == 7.0f).item<bool>()) << "columns past n were written";
}

TEST(Bf16Gemm, MatchesTheRoundedProductInEveryLayout) {
  SKIP_WITHOUT_TILES();
  at::manual_seed(3);
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                                                      {32, 32, 32},
                                                                                      {17, 40, 33},
                                                                                      {50, 24, 192},
                                                                                      {64, 96, 70},
                                                                                      {100, 10, 31},
                                                                                      {33, 65, 160}})
        for (const int parts : {1, 2, 3})
          on_each_kernel([&, m = m, n = n, k = k](bool tiles) {
            check_product(ta, tb, m, n, k, {parts, tiles}, (m + parts) % 2 == 1);
          });
}

TEST(Bf16Gemm, ShapesOfATrainingStep) {
  SKIP_WITHOUT_TILES();
  at::manual_seed(4);
  on_each_kernel([](bool tiles) {
    check_product(false, true, 1600, 576, 192, {2, tiles}, true);  // forward: x w^T + b
    check_product(false, false, 1600, 192, 768, {2, tiles});       // input gradient: dy w
    check_product(true, false, 768, 192, 1600, {2, tiles});        // weight gradient: dy^T x
  });
}

// Which kernel runs is named, and asking for no tiles leaves the dot products;
// the options say which of the two a run asks for.
TEST(Bf16Gemm, KernelIsNamed) {
  const std::string kernel = bf16_gemm_kernel();
  if (!bf16_gemm_available()) {
    EXPECT_EQ(kernel, "none");
    return;
  }
  EXPECT_TRUE(kernel == "amx" || kernel == "avx512-bf16") << kernel;
  EXPECT_STREQ(bf16_gemm_kernel(false), "avx512-bf16");
  EXPECT_EQ(std::string(bf16_gemm_kernel(true)), kernel);
  EXPECT_TRUE(bf16_run(EngineOptions{}).tiles);
  EXPECT_FALSE(bf16_run(with(EngineOptions{}, &EngineOptions::bf16_tiles, false)).tiles);
  EXPECT_EQ(bf16_run(test_support::threads_options(3)).parts, 3);
}

TEST(Bf16Gemm, NonFiniteInputsReachTheOutput) {
  SKIP_WITHOUT_TILES();
  at::Tensor a = at::ones({32, 32}), b = at::ones({32, 32}), c = at::zeros({32, 32});
  a[3][5] = std::numeric_limits<float>::quiet_NaN();
  a[7][1] = std::numeric_limits<float>::infinity();
  on_each_kernel([&](bool tiles) {
    bf16_gemm(false, false, 32, 32, 32, a.data_ptr<float>(), 32, b.data_ptr<float>(), 32, c.data_ptr<float>(),
              32, {2, tiles});
    EXPECT_TRUE(at::all(at::isnan(c[3])).item<bool>());
    EXPECT_TRUE(at::all(at::isinf(c[7])).item<bool>());
    EXPECT_TRUE(at::all(c[0] == 32.0f).item<bool>());
  });
}

TEST(Bf16Gemm, ConcurrentCallersKeepTheirOwnScratch) {  // the studio's two runs, each on its thread
  SKIP_WITHOUT_TILES();
  at::manual_seed(10);
  std::vector<std::thread> callers;
  std::vector<int> failures(2, 0);
  for (int t = 0; t < 2; ++t)
    callers.emplace_back([t, &failures] {
      const int64_t m = 40 + 30 * t, n = 50 - 10 * t, k = 70 + 20 * t;
      const at::Tensor a = at::randn({m, k}), b = at::randn({k, n});
      const at::Tensor want = at::mm(rounded(a), rounded(b));
      for (int round = 0; round < 50; ++round) {
        at::Tensor c = at::empty({m, n});
        bf16_gemm(false, false, m, n, k, a.data_ptr<float>(), k, b.data_ptr<float>(), n, c.data_ptr<float>(),
                  n, Bf16Run{2});
        if (relative_error(c, want) > 2e-6) ++failures[size_t(t)];
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures[0], 0);
  EXPECT_EQ(failures[1], 0);
}

TEST(Bf16Gemm, PrecisionNamesAndErrors) {
  EXPECT_EQ(parse_dense_precision("fp32"), DensePrecision::Fp32);
  EXPECT_STREQ(dense_precision_name(DensePrecision::Bf16), "bf16");
  EXPECT_THROW(parse_dense_precision("fp16"), Error);
  if (bf16_gemm_available()) {
    EXPECT_EQ(parse_dense_precision("bf16"), DensePrecision::Bf16);
    EXPECT_EQ(bf16_gemm_unavailable_reason(), "");
  } else {
    EXPECT_THROW(parse_dense_precision("bf16"), Error);
    EXPECT_NE(bf16_gemm_unavailable_reason(), "");
  }
}

// Options with the training step's products in bfloat16.
EngineOptions bf16_options(EngineOptions options = {}) {
  return with(options, &EngineOptions::precision, DensePrecision::Bf16);
}

// A dense layer's output and gradients in bf16 mode against the rounded double reference.
void check_dense(int threads) {
  const EngineOptions bf16 = bf16_options(test_support::threads_options(threads));
  torch::nn::Linear layer(torch::nn::LinearOptions(70, 48));
  const at::Tensor x = at::randn({3, 17, 70}).requires_grad_(true);
  const at::Tensor y = linear(bf16, layer, x);
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_NE(y.grad_fn()->name().find("SplitLinear"), std::string::npos) << y.grad_fn()->name();
  const at::Tensor dy = at::randn(y.sizes());
  y.backward(dy);

  const at::Tensor x2 = x.detach().reshape({-1, 70}), dy2 = dy.reshape({-1, 48}), w = layer->weight.detach();
  const at::Tensor want_y = at::mm(rounded(x2), rounded(w).t()) + layer->bias.detach().to(at::kDouble);
  const at::Tensor want_dx = at::mm(rounded(dy2), rounded(w));
  const at::Tensor want_dw = at::mm(rounded(dy2).t(), rounded(x2));
  SCOPED_TRACE(testing::Message() << "threads " << threads);
  EXPECT_LT(relative_error(y.detach().reshape({-1, 48}), want_y), 2e-6);
  EXPECT_LT(relative_error(x.grad().reshape({-1, 70}), want_dx), 2e-6);
  EXPECT_LT(relative_error(layer->weight.grad(), want_dw), 2e-6);
  EXPECT_LT(relative_error(layer->bias.grad(), dy2.sum(0).to(at::kDouble)), 1e-6);
}

TEST(Bf16Dense, LayerProductsAndGradientsAreTheRoundedOnes) {
  SKIP_WITHOUT_TILES();
  at::manual_seed(5);
  for (const int threads : {1, 2}) check_dense(threads);
}

TEST(Bf16Dense, StaysFp32WhereItMustNotApply) {
  SKIP_WITHOUT_TILES();
  at::manual_seed(6);
  torch::nn::Linear layer(torch::nn::LinearOptions(40, 24));
  const at::Tensor x = at::randn({9, 40});
  const at::Tensor exact = at::mm(x.to(at::kDouble), layer->weight.detach().to(at::kDouble).t()) +
                           layer->bias.detach().to(at::kDouble);
  {  // fp32 mode (the default), with gradients: fp32 to rounding
    const at::Tensor y = linear(EngineOptions{}, layer, x.clone().requires_grad_(true));
    EXPECT_LT(relative_error(y.detach(), exact), 1e-6);
  }
  const EngineOptions bf16 = bf16_options();
  {  // no gradients recorded (inference): fp32
    at::NoGradGuard no_grad;
    EXPECT_LT(relative_error(linear(bf16, layer, x), exact), 1e-6);
  }
  {  // double: fp64, untouched by the mode
    torch::nn::Linear wide(torch::nn::LinearOptions(40, 24));
    wide->to(at::kDouble);
    const at::Tensor xd = x.to(at::kDouble).requires_grad_(true);
    const at::Tensor want = at::mm(xd.detach(), wide->weight.detach().t()) + wide->bias.detach();
    EXPECT_LT(relative_error(linear(bf16, wide, xd).detach(), want), 1e-14);
  }
  {  // with gradients in bf16 mode the rounding shows (the mode is on)
    const at::Tensor y = linear(bf16, layer, x.clone().requires_grad_(true));
    const double error = relative_error(y.detach(), exact);
    EXPECT_GT(error, 1e-5);
    EXPECT_LT(error, 3e-2);
  }
}

// Translution's offset-matrix products in bf16 precision (banks of 64 x 64 and
// more): the forward is the paper's equations (the naive per-pair reference, in
// double) on the operands rounded to bfloat16; the gradients also round what
// flows back, so they are compared more loosely. One head spanning the width:
// no output projection, whose input the reference would not round.
TEST(Bf16Relative, TranslutionProductsAreTheRoundedOnes) {
  SKIP_WITHOUT_TILES();
  at::manual_seed(9);
  const AttentionSpec spec = attention_choice("translution").spec;
  const AttentionShape shape{64, 1, 64};
  const TokenLayout layout = TokenLayout::grid(2, 3, true);
  auto module = make_attention(spec, shape, layout);
  const at::Tensor x = at::randn({2, layout.tokens(), 64}).requires_grad_(true);
  const at::Tensor probe = at::randn({2, layout.tokens(), 64});
  at::Tensor out;
  {
    // The matrices split over two parts, each with its own scratch.
    const EngineOptions bf16 = bf16_options(test_support::threads_options(2));
    out = module->forward(bf16, x, nullptr);
    (out * probe).sum().backward();
  }
  auto reference = make_attention(spec, shape, layout);
  reference->to(at::kDouble);
  {
    at::NoGradGuard no_grad;
    const auto fast = module->named_parameters();
    for (auto& p : reference->named_parameters()) p.value().copy_(rounded(fast[p.key()].detach()));
  }
  const at::Tensor xr = rounded(x.detach()).requires_grad_(true);
  const at::Tensor want = test_support::naive_attention(*reference, spec, shape, layout, xr);
  EXPECT_LT(relative_error(out.detach(), want.detach()), 1e-5);
  (want * probe.to(at::kDouble)).sum().backward();
  EXPECT_LT(relative_error(x.grad(), xr.grad()), 3e-2);
  const auto fast = module->named_parameters();
  for (const auto& p : reference->named_parameters())
    EXPECT_LT(relative_error(fast[p.key()].grad(), p.value().grad()), 3e-2) << p.key();
  // And the mode took effect: against the unrounded operands the forward differs.
  const at::Tensor fp32 =
      test_support::naive_attention(*module, spec, shape, layout, x.detach()).to(at::kDouble);
  EXPECT_GT(relative_error(out.detach(), fp32.detach()), 1e-4);
}

TEST(Bf16Dense, ASmallViTLearnsABatchInBf16) {
  SKIP_WITHOUT_TILES();
  at::manual_seed(7);
  const EngineOptions bf16 = bf16_options();
  ViT vit(test_support::small_vit_config("attention"));
  torch::optim::AdamW optimizer(vit->parameters(), torch::optim::AdamWOptions(3e-3));
  const at::Tensor images = at::randn({16, 1, 28, 21}), labels = at::randint(0, 10, {16}, at::kLong);
  {  // the mode reaches the model's layers: its logits are not fp32's
    const at::Tensor bf16_logits = vit->forward(bf16, images).detach();
    const at::Tensor fp32_logits = vit->forward(EngineOptions{}, images).detach();
    EXPECT_GT(relative_error(bf16_logits, fp32_logits.to(at::kDouble)), 1e-5);
    EXPECT_LT(relative_error(bf16_logits, fp32_logits.to(at::kDouble)), 5e-2);
  }
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    optimizer.zero_grad();
    const at::Tensor loss = torch::nn::functional::cross_entropy(vit->forward(bf16, images), labels);
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.25 * first) << "first loss " << first << ", last " << last;
}

}  // namespace
}  // namespace translution
