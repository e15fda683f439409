// The fused forward without gradients (cpu/inference_passes.h) against LibTorch's
// own ops: the element-wise kernels against their definitions, each fused pass
// against the ops it replaces (double to rounding, float to the kernels'
// accuracy), whole models with the passes on and off, and the passes never
// taken where a gradient is wanted.
#include "cpu/inference_passes.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/linear.h"
#include "cpu/vector_math.h"
#include "nn/attention_math.h"
#include "nn/vit.h"
#include "tensor_checks.h"
#include "test_switches.h"

namespace translution {
namespace {

using test_support::max_relative_error;

double gelu_reference(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(VectorMath, GeluMatchesItsDefinition) {
  at::manual_seed(11);
  // Lengths around the 16-lane vectors (masked tails); values from the far negative tail to large positives.
  for (const int64_t n : {1, 7, 15, 16, 17, 33, 768}) {
    std::vector<float> x(static_cast<size_t>(n));
    const at::Tensor r = at::rand({n}, at::kDouble) * 24 - 12;
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(r[i].item<double>());
    if (n > 3) {
      x[0] = 0.0f;
      x[1] = -0.0f;
      x[2] = 1e-20f;
      x[3] = -40.0f;
    }
    std::vector<float> y = x;
    gelu_in_place(y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = gelu_reference(double(x[size_t(i)]));
      // erf's absolute error (1.5e-7) scaled by x / 2, and float rounding.
      EXPECT_NEAR(y[size_t(i)], want, 3e-7 * (1 + std::abs(double(x[size_t(i)]))))
          << "x = " << x[size_t(i)] << ", n = " << n;
    }
    std::vector<double> xd(x.begin(), x.end());
    gelu_in_place(xd.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(xd[size_t(i)], gelu_reference(double(x[size_t(i)])), 1e-15 * (1 + std::abs(xd[size_t(i)])));
  }
  float nan = std::numeric_limits<float>::quiet_NaN();
  gelu_in_place(&nan, 1);
  EXPECT_TRUE(std::isnan(nan));
}

// softmax(scale row) with the masked entries at -infinity, in double.
std::vector<double> softmax_reference(const std::vector<double>& row, double scale, const bool* kept) {
  double top = -std::numeric_limits<double>::infinity(), sum = 0;
  for (size_t j = 0; j < row.size(); ++j)
    if (!kept || kept[j]) top = std::max(top, scale * row[j]);
  std::vector<double> out(row.size(), 0.0);
  for (size_t j = 0; j < row.size(); ++j)
    if (!kept || kept[j]) sum += out[j] = std::exp(scale * row[j] - top);
  for (double& v : out) v /= sum;
  return out;
}

TEST(VectorMath, ScaledSoftmaxMatchesItsDefinition) {
  at::manual_seed(12);
  for (const int64_t n : {1, 5, 16, 17, 50, 70})
    for (const bool masked : {false, true})
      for (const double scale : {0.125, 1.0}) {
        SCOPED_TRACE("n = " + std::to_string(n) + (masked ? ", masked" : "") + ", scale " +
                     std::to_string(scale));
        const at::Tensor r = at::rand({n}, at::kDouble) * 80 - 40;
        std::vector<double> row(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) row[size_t(j)] = double(float(r[j].item<double>()));
        std::vector<char> keep(static_cast<size_t>(n), 1);
        if (masked)  // a causal row: the first half kept
          for (int64_t j = (n + 1) / 2; j < n; ++j) keep[size_t(j)] = 0;
        const bool* kept = masked ? reinterpret_cast<const bool*>(keep.data()) : nullptr;
        const std::vector<double> want = softmax_reference(row, scale, kept);
        std::vector<float> f(row.begin(), row.end());
        scaled_softmax_in_place(f.data(), n, float(scale), kept);
        std::vector<double> d = row;
        scaled_softmax_in_place(d.data(), n, scale, kept);
        for (int64_t j = 0; j < n; ++j) {
          EXPECT_NEAR(f[size_t(j)], want[size_t(j)], 2e-6 * want[size_t(j)] + 1e-12);
          EXPECT_NEAR(d[size_t(j)], want[size_t(j)], 1e-14);
          if (kept && !kept[j]) {
            EXPECT_EQ(f[size_t(j)], 0.0f);
          }
        }
      }
  // Large logits do not overflow (the maximum is subtracted first); a NaN logit poisons its row.
  std::vector<float> big = {1e4f, 1e4f - 1, -1e4f};
  scaled_softmax_in_place(big.data(), 3, 1.0f, nullptr);
  EXPECT_NEAR(big[0], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(big[2], 0.0f);
  std::vector<float> poisoned(20, 1.0f);
  poisoned[17] = std::numeric_limits<float>::quiet_NaN();
  scaled_softmax_in_place(poisoned.data(), 20, 1.0f, nullptr);
  EXPECT_TRUE(std::isnan(poisoned[0]));
}

TEST(FusedInference, NormalizeMatchesLayerNorm) {
  at::manual_seed(13);
  const at::NoGradGuard no_grad;
  for (const auto type : {at::kDouble, at::kFloat})
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{2, 5, 7}, {1, 50, 192}, {3, 144}}) {
      torch::nn::LayerNorm layer(torch::nn::LayerNormOptions({shape.back()}));
      layer->to(type);
      layer->weight.uniform_(-2, 2);
      layer->bias.uniform_(-1, 1);
      const at::Tensor x = (at::randn(shape, type) * 3 + 1).contiguous();
      const at::Tensor fused = normalize(EngineOptions{}, layer, x);
      EXPECT_LT(max_relative_error(fused, layer->forward(x)), type == at::kDouble ? 1e-13 : 2e-6);
      EXPECT_EQ(fused.sizes(), x.sizes());
    }
}

TEST(FusedInference, DenseEpiloguesMatchTheOps) {
  at::manual_seed(14);
  const at::NoGradGuard no_grad;
  // Widths that split over the parts evenly, unevenly and below the 16-column alignment; a batch, and
  // one image's 50 rows over k >= 32, which go to the BLAS in slices of 24 columns (the last one shorter).
  for (const int threads : {1, 2, 3})
    for (const int64_t out : {40, 17, 768, 200})
      for (const auto type : {at::kDouble, at::kFloat})
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{{2, 9, 24}, {1, 50, 192}}) {
          SCOPED_TRACE(std::to_string(threads) + " thread(s), width " + std::to_string(out) + ", k " +
                       std::to_string(shape.back()));
          const EngineOptions engine = test_support::threads_options(threads);
          torch::nn::Linear layer(torch::nn::LinearOptions(shape.back(), out));
          layer->to(type);
          const at::Tensor x = at::randn(shape, type), residual = at::randn({shape[0], shape[1], out}, type);
          const double tolerance = type == at::kDouble ? 1e-12 : 2e-6;
          EXPECT_LT(max_relative_error(linear_gelu(engine, layer, x), at::gelu(layer->forward(x))),
                    tolerance);
          EXPECT_LT(max_relative_error(linear_add(engine, layer, x, residual), residual + layer->forward(x)),
                    tolerance);
          EXPECT_LT(max_relative_error(linear(engine, layer, x), layer->forward(x)), tolerance);
        }
}

TEST(FusedInference, DenseEachGivesEveryLayersOutput) {
  at::manual_seed(19);
  // Layers of widths that put the parts' boundaries inside, between and at the ends of layers.
  for (const int threads : {1, 2, 3})
    for (const auto type : {at::kDouble, at::kFloat}) {
      SCOPED_TRACE(std::to_string(threads) + " thread(s)");
      const EngineOptions engine = test_support::threads_options(threads);
      // k = 64: one image's rows go to the BLAS in slices of 24 columns.
      torch::nn::Linear a(torch::nn::LinearOptions(64, 40)), b(torch::nn::LinearOptions(64, 8).bias(false)),
          c(torch::nn::LinearOptions(64, 72));
      for (auto* layer : {&a, &b, &c}) (*layer)->to(type);
      const at::Tensor x = at::randn({1, 50, 64}, type);
      std::vector<at::Tensor> each;
      {
        const at::NoGradGuard no_grad;
        each = linear_each(engine, {&a, &b, &c}, x);
      }
      ASSERT_EQ(each.size(), 3u);
      const double tolerance = type == at::kDouble ? 1e-12 : 2e-6;
      int i = 0;
      for (auto* layer : {&a, &b, &c}) {
        EXPECT_EQ(each[size_t(i)].sizes(), (*layer)->forward(x).sizes());
        EXPECT_LT(max_relative_error(each[size_t(i++)], (*layer)->forward(x).detach()), tolerance);
      }
      // With gradients wanted it is linear() per layer, and the outputs carry their graphs.
      const std::vector<at::Tensor> graphs = linear_each(engine, {&a, &b, &c}, x);
      for (const at::Tensor& t : graphs) EXPECT_TRUE(t.requires_grad());
    }
}

TEST(FusedInference, SelfAttentionCoreMatchesTheOps) {
  at::manual_seed(15);
  const at::NoGradGuard no_grad;
  struct Case {
    int64_t batch, tokens, heads, head_dim;
    bool causal;
  };
  for (const Case c : {Case{1, 50, 3, 64, false}, Case{2, 7, 1, 8, false}, Case{2, 70, 2, 16, true},
                       Case{1, 1, 2, 4, false}})
    for (const int threads : {1, 2, 3})
      for (const auto type : {at::kDouble, at::kFloat})
        for (const bool with_probs : {true, false}) {
          SCOPED_TRACE(std::to_string(c.batch) + " x " + std::to_string(c.tokens) + ", " +
                       std::to_string(c.heads) + " heads, " + std::to_string(threads) + " thread(s)" +
                       (c.causal ? ", causal" : ""));
          const EngineOptions engine = test_support::threads_options(threads);
          const at::Tensor qkv = at::randn({c.batch, c.tokens, 3 * c.heads * c.head_dim}, type) * 2;
          const at::Tensor valid = c.causal ? at::ones({c.tokens, c.tokens}, at::kBool).tril() : at::Tensor();
          at::Tensor probs, probs_ops;
          const at::Tensor fused =
              self_attention_core(engine, qkv, c.heads, valid, with_probs ? &probs : nullptr);
          const at::Tensor ops =
              self_attention_core(test_support::reference_options(engine), qkv, c.heads, valid, &probs_ops);
          const double tolerance = type == at::kDouble ? 1e-12 : 5e-6;
          EXPECT_LT(max_relative_error(fused, ops), tolerance);
          if (with_probs) {
            EXPECT_LT(max_relative_error(probs, probs_ops), tolerance);
            if (c.causal) {
              EXPECT_EQ(probs.masked_select(valid.logical_not()).abs().sum().item<double>(), 0.0);
            }
          }
        }
}

TEST(FusedInference, AttentionSoftmaxMatchesTheOps) {
  at::manual_seed(18);
  const at::NoGradGuard no_grad;
  for (const auto type : {at::kDouble, at::kFloat})
    for (const bool causal : {false, true})
      for (const double divisor : {1.0, 8.0}) {
        const at::Tensor logits = at::randn({2, 3, 9, 9}, type) * 10;
        const at::Tensor valid = causal ? at::ones({9, 9}, at::kBool).tril() : at::Tensor();
        const at::Tensor fused = attention_softmax(EngineOptions{}, logits, valid, divisor);
        const at::Tensor ops = attention_softmax(test_support::reference_options(), logits, valid, divisor);
        EXPECT_LT(max_relative_error(fused, ops), type == at::kDouble ? 1e-13 : 2e-6);
        EXPECT_EQ(fused.sizes(), logits.sizes());
      }
}

TEST(FusedInference, WholeModelsMatchTheOpsAndTheirAttentionMaps) {
  at::manual_seed(16);
  // One image (the studio's case: LoR's W2v product runs fused only there) and two; double and float.
  for (const std::string model : {"attention", "attention-nope", "rope", "lor", "translution"})
    for (const int64_t batch : {1, 2})
      for (const auto type : {at::kDouble, at::kFloat}) {
        SCOPED_TRACE(model + ", batch " + std::to_string(batch) +
                     (type == at::kFloat ? ", float" : ", double"));
        ViT vit(test_support::small_vit_config(model));
        vit->to(type);
        const at::Tensor images = at::randn({batch, 1, 28, 21}, type);
        const at::NoGradGuard no_grad;
        ViTInspection fused_maps, op_maps;
        const at::Tensor fused = vit->forward(EngineOptions{}, images, &fused_maps);
        const at::Tensor ops = vit->forward(test_support::reference_options(), images, &op_maps);
        const double tolerance = type == at::kDouble ? 1e-12 : 1e-5;
        EXPECT_LT(max_relative_error(fused, ops), tolerance);
        ASSERT_EQ(fused_maps.attention.size(), op_maps.attention.size());
        for (size_t l = 0; l < op_maps.attention.size(); ++l)
          EXPECT_LT(max_relative_error(fused_maps.attention[l], op_maps.attention[l]), tolerance);
      }
}

TEST(FusedInference, SelfAttentionWithoutTheRawBlasFallsBackToTheOps) {
  at::manual_seed(20);
  const at::NoGradGuard no_grad;
  const at::Tensor qkv = at::randn({1, 9, 3 * 2 * 8}, at::kDouble);
  const at::Tensor fused = self_attention_core(EngineOptions{}, qkv, 2, at::Tensor(), nullptr);
  const at::Tensor ops =
      self_attention_core(test_support::reference_options(), qkv, 2, at::Tensor(), nullptr);
  EXPECT_LT(max_relative_error(fused, ops), 1e-12);
}

TEST(FusedInference, NeverTakenWhereAGradientIsWanted) {
  at::manual_seed(17);
  for (const std::string model : {"attention", "lor", "translution"}) {
    SCOPED_TRACE(model);
    ViT vit(test_support::small_vit_config(model));
    vit->to(at::kDouble);
    const at::Tensor images = at::randn({1, 1, 28, 21}, at::kDouble);
    const at::Tensor loss = vit->forward(EngineOptions{}, images).square().sum();
    ASSERT_TRUE(loss.requires_grad());
    loss.backward();
    // Every parameter that reaches the loss gets its gradient, and it is the ops' gradient.
    std::vector<at::Tensor> grads;
    for (const auto& p : vit->parameters()) {
      ASSERT_TRUE(p.grad().defined());
      grads.push_back(p.grad().clone());
      p.mutable_grad().zero_();
    }
    vit->forward(test_support::reference_options(), images).square().sum().backward();
    size_t i = 0;
    for (const auto& p : vit->parameters()) EXPECT_LT(max_relative_error(grads[i++], p.grad()), 1e-12);
  }
}

}  // namespace
}  // namespace translution
