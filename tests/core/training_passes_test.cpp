// The element-wise passes of a forward that records gradients
// (cpu/training_passes.h) against LibTorch's own ops, forward and backward: the
// raw backward kernels against their definitions, each autograd function against
// the op it replaces (double to rounding, float to the kernels' accuracy), split
// over several threads and not, second derivatives through them, whole models'
// gradients with the passes on and off, self-attention's maps, and the passes
// not taken where they must not be.
#include "cpu/training_passes.h"

#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "cpu/helper_threads.h"
#include "cpu/inference_passes.h"
#include "cpu/layer_norm_rows.h"
#include "cpu/vector_math.h"
#include "nn/attention_math.h"
#include "nn/vit.h"
#include "tensor_checks.h"
#include "test_switches.h"

namespace translution {
namespace {

using test_support::max_relative_error;

double gelu_slope(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

TEST(VectorMath, GeluBackwardMatchesItsDefinition) {
  at::manual_seed(31);
  for (const int64_t n : {1, 7, 16, 17, 33, 768}) {
    const at::Tensor r = at::rand({n}, at::kDouble) * 24 - 12;
    std::vector<float> x(static_cast<size_t>(n)), dy(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      x[size_t(i)] = float(r[i].item<double>());
      dy[size_t(i)] = float(0.5 + i % 3);
    }
    if (n > 3) {
      x[0] = 0.0f;
      x[1] = -0.0f;
      x[2] = 1e-20f;
      x[3] = -40.0f;
    }
    gelu_backward(x.data(), dy.data(), dx.data(), n);
    std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), dxd(static_cast<size_t>(n));
    gelu_backward(xd.data(), dyd.data(), dxd.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = dyd[size_t(i)] * gelu_slope(xd[size_t(i)]);
      // The CDF's absolute error (0.75e-7) and the density term's rounding, times dy.
      EXPECT_NEAR(dx[size_t(i)], want, 4e-7 * dyd[size_t(i)] * (1 + std::abs(xd[size_t(i)])))
          << "x = " << x[size_t(i)] << ", n = " << n;
      EXPECT_NEAR(dxd[size_t(i)], want, 1e-15 * (1 + std::abs(want)));
    }
  }
  // In place (dx = dy) gives the same.
  std::vector<float> x = {-1.5f, 0.25f, 3.0f}, g = {1.0f, 2.0f, -1.0f}, out(3);
  gelu_backward(x.data(), g.data(), out.data(), 3);
  gelu_backward(x.data(), g.data(), g.data(), 3);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g[i], out[i]);
}

TEST(VectorMath, SoftmaxBackwardMatchesItsDefinition) {
  at::manual_seed(32);
  for (const int64_t n : {1, 5, 16, 17, 50, 70})
    for (const double scale : {0.125, 1.0}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", scale " + std::to_string(scale));
      const at::Tensor alpha = at::softmax(at::randn({n}, at::kDouble) * 3, 0),
                       g = at::randn({n}, at::kDouble);
      const at::Tensor want = scale * alpha * (g - (g * alpha).sum());
      std::vector<double> a(alpha.data_ptr<double>(), alpha.data_ptr<double>() + n);
      std::vector<double> gd(g.data_ptr<double>(), g.data_ptr<double>() + n), dd(static_cast<size_t>(n));
      softmax_backward(a.data(), gd.data(), dd.data(), n, scale);
      std::vector<float> af(a.begin(), a.end()), gf(gd.begin(), gd.end()), df(static_cast<size_t>(n));
      softmax_backward(af.data(), gf.data(), df.data(), n, float(scale));
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_NEAR(dd[size_t(j)], want[j].item<double>(), 1e-15);
        EXPECT_NEAR(df[size_t(j)], want[j].item<double>(), 1e-6);
      }
    }
}

TEST(LayerNormRows, BackwardMatchesLibTorch) {
  at::manual_seed(33);
  for (const int64_t n : {2, 7, 16, 192}) {
    const int64_t rows = 5;
    const at::Tensor x = (at::randn({rows, n}, at::kDouble) * 2 + 1).requires_grad_();
    const at::Tensor gamma = at::rand({n}, at::kDouble).add_(0.5).requires_grad_();
    const at::Tensor beta = at::randn({n}, at::kDouble).requires_grad_();
    const at::Tensor g = at::randn({rows, n}, at::kDouble);
    at::layer_norm(x, {n}, gamma, beta, 1e-5).backward(g);
    at::Tensor y = at::empty({rows, n}, at::kDouble), mean = at::empty({rows}, at::kDouble),
               rstd = at::empty_like(mean);
    layer_norm_rows<double>(x.data_ptr<double>(), y.data_ptr<double>(), rows, n, gamma.data_ptr<double>(),
                            beta.data_ptr<double>(), 1e-5, mean.data_ptr<double>(), rstd.data_ptr<double>());
    EXPECT_LT(max_relative_error(y, at::layer_norm(x.detach(), {n}, gamma.detach(), beta.detach(), 1e-5)),
              1e-13);
    at::Tensor dx = at::empty_like(y), dgamma = at::zeros({n}, at::kDouble),
               dbeta = at::zeros({n}, at::kDouble);
    layer_norm_rows_backward<double>(x.data_ptr<double>(), g.data_ptr<double>(), mean.data_ptr<double>(),
                                     rstd.data_ptr<double>(), gamma.data_ptr<double>(), rows, n,
                                     dx.data_ptr<double>(), dgamma.data_ptr<double>(),
                                     dbeta.data_ptr<double>());
    SCOPED_TRACE("n = " + std::to_string(n));
    EXPECT_LT(max_relative_error(dx, x.grad()), 1e-12);
    EXPECT_LT(max_relative_error(dgamma, gamma.grad()), 1e-13);
    EXPECT_LT(max_relative_error(dbeta, beta.grad()), 1e-13);
  }
}

using Function = std::function<at::Tensor(const EngineOptions&, const std::vector<at::Tensor>&)>;

// f under `engine` (the kernels) and under its reference options (the ops) for one
// function of several inputs: outputs and every input's gradient. `node` names the
// engine's autograd function, which must record the output with the passes on and
// must not with them off (so that a gate that silently fell back cannot pass as equal).
void expect_same(const EngineOptions& engine, const Function& f, const std::vector<at::Tensor>& inputs,
                 double tolerance, const std::string& node) {
  const auto run = [&](const EngineOptions& options) {
    std::vector<at::Tensor> leaves;
    for (const at::Tensor& t : inputs) leaves.push_back(t.detach().clone().requires_grad_());
    const at::Tensor y = f(options, leaves);
    const std::string recorded = y.grad_fn()->name();
    EXPECT_EQ(recorded.find("::" + node + ">") != std::string::npos, !options.reference) << recorded;
    at::manual_seed(77);
    y.backward(at::randn_like(y));
    std::vector<at::Tensor> out = {y.detach()};
    for (const at::Tensor& t : leaves) out.push_back(t.grad());
    return out;
  };
  const std::vector<at::Tensor> kernels = run(engine), ops = run(test_support::reference_options(engine));
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(i == 0 ? "output" : "gradient of input " + std::to_string(i - 1));
    ASSERT_TRUE(kernels[i].defined());
    EXPECT_LT(max_relative_error(kernels[i], ops[i]), tolerance);
  }
}

TEST(TrainingKernels, MatchTheOpsForwardAndBackward) {
  at::manual_seed(34);
  // One part and several: the splits of rows and elements (and LayerNorm's per-part sums) change nothing.
  for (const int threads : {1, 2, 3})
    for (const auto type : {at::kDouble, at::kFloat}) {
      SCOPED_TRACE(std::to_string(threads) + " threads" + (type == at::kFloat ? ", float" : ", double"));
      const double tolerance = type == at::kDouble ? 1e-12 : 2e-6;
      // The work forced over `threads` parts (every split taken, even on tiny inputs).
      const EngineOptions engine = test_support::threads_options(threads);
      expect_same(
          engine,
          [](const EngineOptions& o, const std::vector<at::Tensor>& in) { return trained_gelu(o, in[0]); },
          {at::randn({3, 5, 37}, type) * 3}, tolerance, "Gelu");
      expect_same(
          engine,
          [](const EngineOptions& o, const std::vector<at::Tensor>& in) {
            if (o.reference) return at::layer_norm(in[0], {24}, in[1], in[2], 1e-5);
            EXPECT_TRUE(training_kernels_apply(o, {&in[0], &in[1], &in[2]}));
            return trained_layer_norm(o, in[0], in[1], in[2], 1e-5);
          },
          {at::randn({2, 9, 24}, type) * 2 + 1, at::rand({24}, type) + 0.5, at::randn({24}, type)}, tolerance,
          "LayerNorm");
      const at::Tensor causal = at::ones({7, 7}, at::kBool).tril();
      for (const at::Tensor& mask : {at::Tensor(), causal}) {
        expect_same(
            engine,
            [&](const EngineOptions& o, const std::vector<at::Tensor>& in) {
              return attention_softmax(o, in[0], mask, 4.0);
            },
            {at::randn({2, 3, 7, 7}, type) * 4}, tolerance, "ScaledSoftmax");
        // Self-attention of two heads of 4 over 7 tokens: q, k and v are the thirds of qkv.
        expect_same(
            engine,
            [&](const EngineOptions& o, const std::vector<at::Tensor>& in) {
              return self_attention_core(o, in[0], 2, mask, nullptr);
            },
            {at::randn({3, 7, 3 * 2 * 4}, type) * 2}, tolerance, "SelfAttentionCore");
      }
    }
}

TEST(TrainingKernels, SelfAttentionGivesTheOpsAttentionMaps) {
  at::manual_seed(38);
  const at::Tensor qkv = at::randn({2, 9, 3 * 3 * 5}, at::kDouble).requires_grad_();
  at::Tensor kernels, ops;
  self_attention_core(EngineOptions{}, qkv, 3, at::Tensor(), &kernels);
  self_attention_core(test_support::reference_options(), qkv, 3, at::Tensor(), &ops);
  ASSERT_EQ(kernels.sizes(), (std::vector<int64_t>{2, 3, 9, 9}));
  EXPECT_LT(max_relative_error(kernels, ops), 1e-13);
  EXPECT_FALSE(kernels.requires_grad());
}

// A LayerNorm of width n in double with a scale and shift away from 1 and 0.
torch::nn::LayerNorm double_layer_norm(int64_t n) {
  torch::nn::LayerNorm layer(torch::nn::LayerNormOptions({n}));
  layer->to(at::kDouble);
  const at::NoGradGuard no_grad;
  layer->weight.uniform_(0.5, 1.5);
  layer->bias.uniform_(-1, 1);
  return layer;
}

TEST(TrainingKernels, LayerNormTakesItsParametersGradients) {
  // normalize() with the passes: the layer's own weight and bias get their gradients.
  at::manual_seed(35);
  torch::nn::LayerNorm layer = double_layer_norm(16);
  const at::Tensor x = at::randn({4, 16}, at::kDouble).requires_grad_();
  normalize(EngineOptions{}, layer, x).square().sum().backward();
  const at::Tensor gx = x.grad().clone(), gw = layer->weight.grad().clone(), gb = layer->bias.grad().clone();
  x.mutable_grad().zero_();
  layer->weight.mutable_grad().zero_();
  layer->bias.mutable_grad().zero_();
  layer->forward(x).square().sum().backward();
  EXPECT_LT(max_relative_error(gx, x.grad()), 1e-12);
  EXPECT_LT(max_relative_error(gw, layer->weight.grad()), 1e-12);
  EXPECT_LT(max_relative_error(gb, layer->bias.grad()), 1e-12);
}

TEST(TrainingKernels, LayerNormWithFrozenParametersGivesTheInputGradientOnly) {
  at::manual_seed(39);
  torch::nn::LayerNorm layer = double_layer_norm(12);
  layer->weight.requires_grad_(false);
  layer->bias.requires_grad_(false);
  const at::Tensor x = at::randn({5, 12}, at::kDouble).requires_grad_();
  const at::Tensor y = normalize(EngineOptions{}, layer, x);
  EXPECT_NE(std::string(y.grad_fn()->name()).find("LayerNorm>"), std::string::npos);
  y.square().sum().backward();
  const at::Tensor gx = x.grad().clone();
  x.mutable_grad().zero_();
  layer->forward(x).square().sum().backward();
  EXPECT_LT(max_relative_error(gx, x.grad()), 1e-12);
  EXPECT_FALSE(layer->weight.grad().defined());
}

TEST(TrainingKernels, SecondDerivativesMatchTheOps) {
  // create_graph: each function's gradient is differentiable, and its own gradient is the ops'.
  at::manual_seed(36);
  torch::nn::LayerNorm layer(torch::nn::LayerNormOptions({6}));
  layer->to(at::kDouble);
  const at::Tensor causal = at::ones({6, 6}, at::kBool).tril();
  // Self-attention's other path (per-head functions) has no second derivative: its reference is LibTorch's
  // ops here (two heads of dimension 1: the logits' scale is 1).
  const auto attention_ops = [&](const at::Tensor& qkv) {
    const auto p = qkv.chunk(3, -1);
    const auto heads = [](const at::Tensor& t) { return t.reshape({2, 6, 2, 1}).transpose(1, 2); };
    const at::Tensor logits =
        at::matmul(heads(p[0]), heads(p[1]).transpose(-1, -2)).masked_fill(causal.logical_not(), -INFINITY);
    return at::matmul(at::softmax(logits, -1), heads(p[2])).transpose(1, 2).reshape({2, 6, 2});
  };
  // Each function under the options given; the ops' version where it has one of its own.
  using Unary = std::function<at::Tensor(const EngineOptions&, const at::Tensor&)>;
  const std::vector<std::pair<Unary, Unary>> functions = {
      {[](const EngineOptions& o, const at::Tensor& x) { return trained_gelu(o, x); }, {}},
      {[&](const EngineOptions& o, const at::Tensor& x) { return normalize(o, layer, x); }, {}},
      {[&](const EngineOptions& o, const at::Tensor& x) { return attention_softmax(o, x, causal, 2.0); }, {}},
      {[&](const EngineOptions& o, const at::Tensor& x) {
         return self_attention_core(o, x, 2, causal, nullptr);
       },
       [&](const EngineOptions&, const at::Tensor& qkv) { return attention_ops(qkv); }},
  };
  const EngineOptions engine, reference = test_support::reference_options();
  for (size_t i = 0; i < functions.size(); ++i) {
    SCOPED_TRACE("function " + std::to_string(i));
    const at::Tensor x0 = at::randn({2, 6, 6}, at::kDouble),
                     probe = at::randn_like(functions[i].first(engine, x0));
    const auto second = [&](const Unary& f, const EngineOptions& o) {
      const at::Tensor x = x0.clone().requires_grad_();
      const at::Tensor dx = torch::autograd::grad({(f(o, x) * probe).sum()}, {x}, {}, true, true)[0];
      return torch::autograd::grad({dx.square().sum()}, {x})[0];
    };
    const at::Tensor expected =
        functions[i].second ? second(functions[i].second, reference) : second(functions[i].first, reference);
    EXPECT_LT(max_relative_error(second(functions[i].first, engine), expected), 1e-10);
  }
}

TEST(TrainingKernels, WholeModelsGradientsMatchTheOps) {
  at::manual_seed(37);
  // Every attention that goes through the softmax: plain, positional, relative (dense and low rank).
  for (const std::string model : {"attention", "rel-bias", "gpsa", "lor", "translution"})
    for (const auto type : {at::kDouble, at::kFloat}) {
      SCOPED_TRACE(model + (type == at::kFloat ? ", float" : ", double"));
      ViT vit(test_support::small_vit_config(model));
      vit->to(type);
      const at::Tensor images = at::randn({3, 1, 28, 21}, type);
      const auto gradients = [&](const EngineOptions& engine) {
        vit->zero_grad();
        const at::Tensor loss = vit->forward(engine, images).square().sum();
        loss.backward();
        std::vector<at::Tensor> out = {loss.detach()};
        for (const auto& p : vit->parameters()) out.push_back(p.grad().clone());
        return out;
      };
      const std::vector<at::Tensor> kernels = gradients(EngineOptions{}),
                                    ops = gradients(test_support::reference_options());
      for (size_t i = 0; i < ops.size(); ++i)
        EXPECT_LT(max_relative_error(kernels[i], ops[i]), type == at::kDouble ? 1e-11 : 2e-4)
            << "tensor " << i;
    }
}

TEST(TrainingKernels, TakenOnlyWhereTheyApply) {
  const EngineOptions engine, reference = test_support::reference_options();
  const at::Tensor x = at::randn({4, 8}).requires_grad_();
  EXPECT_TRUE(training_kernels_apply(engine, {&x}));
  const at::Tensor plain = at::randn({4, 8});
  // Nothing records a gradient: cpu/inference_passes's case.
  EXPECT_FALSE(training_kernels_apply(engine, {&plain}));
  {
    const at::NoGradGuard no_grad;
    EXPECT_FALSE(training_kernels_apply(engine, {&x}));
  }
  const at::Tensor view = x.t();
  EXPECT_FALSE(training_kernels_apply(engine, {&view}));
  const at::Tensor half = at::zeros({4, 8}, at::kHalf).requires_grad_();
  EXPECT_FALSE(training_kernels_apply(engine, {&half}));
  const at::Tensor other = at::randn({4, 8}, at::kDouble);
  EXPECT_FALSE(training_kernels_apply(engine, {&x, &other}));
  EXPECT_FALSE(training_kernels_apply(reference, {&x}));
  // LibTorch's intra-op threads on: its ops use them, these passes would not.
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  EXPECT_FALSE(training_kernels_apply(engine, {&x}));
  at::set_num_threads(threads);
  // A mask that is not [queries x keys] booleans: the softmax is LibTorch's (a broadcast mask works there).
  const at::Tensor logits = at::randn({2, 5, 5}).requires_grad_(), wide_mask = at::ones({1, 5, 5}, at::kBool);
  EXPECT_EQ(attention_softmax(engine, logits, wide_mask, 2.0).grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_NE(attention_softmax(engine, logits, at::Tensor(), 2.0).grad_fn()->name(), "SoftmaxBackward0");
  // Under the reference options GELU is LibTorch's op: its graph node says so.
  EXPECT_EQ(trained_gelu(reference, x).grad_fn()->name(), "GeluBackward0");
  EXPECT_NE(trained_gelu(engine, x).grad_fn()->name(), "GeluBackward0");
}

}  // namespace
}  // namespace translution
