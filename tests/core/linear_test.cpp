// linear() is the linear layer with its products split over threads, and
// run_parts runs every part exactly once, from any number of callers.
#include "cpu/linear.h"

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "cpu/bf16_gemm.h"
#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "util/device.h"
#include "util/engine_options.h"

namespace translution {
namespace {

using test_support::max_relative_error;

struct LayerCase {
  int64_t in, out, rows;
  bool bias, input_grad = true, weight_grad = true;
};

// Runs check(engine, case, layer) for every case under options of 1, 2 and 3
// matrix threads, with a fresh double layer.
template <typename Check>
void for_each_split(const std::vector<LayerCase>& cases, Check check) {
  for (const LayerCase& c : cases)
    for (const int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::to_string(c.rows) + " x " + std::to_string(c.in) + " -> " + std::to_string(c.out) +
                   ", " + std::to_string(threads) + " thread(s)");
      torch::nn::Linear layer(torch::nn::LinearOptions(c.in, c.out).bias(c.bias));
      layer->to(at::kDouble);
      check(test_support::threads_options(threads), c, layer);
    }
}

TEST(Dense, SplitColumnsGiveTheLinearLayersOutputInDouble) {
  at::manual_seed(5);
  const at::NoGradGuard no_grad;
  // Widths that split evenly, unevenly and into parts narrower than the 16-column
  // alignment; with and without bias; one image's tokens and a batch.
  for_each_split(
      {{19, 96, 50, true}, {33, 200, 7, false}, {8, 40, 50, true}, {24, 17, 3, true}, {16, 64, 130, true}},
      [](const EngineOptions& engine, const LayerCase& c, torch::nn::Linear& layer) {
        const at::Tensor x = at::randn({1, c.rows, c.in}, at::kDouble);
        const at::Tensor out = linear(engine, layer, x);
        EXPECT_EQ(out.sizes(), (std::vector<int64_t>{1, c.rows, c.out}));
        EXPECT_LT(max_relative_error(out, layer->forward(x)), 1e-12);
        // A strided input (not contiguous) goes through the module's own forward.
        const at::Tensor wide = at::randn({1, c.rows, 2 * c.in}, at::kDouble);
        const at::Tensor strided = wide.narrow(2, 0, c.in);
        EXPECT_LT(max_relative_error(linear(engine, layer, strided), layer->forward(strided)), 1e-12);
      });
  const EngineOptions three = test_support::threads_options(3);
  EXPECT_EQ(linear_parts(three, 50, 8, 192), 1) << "narrower than one aligned part";
  EXPECT_EQ(linear_parts(three, 50, 40, 192), 2) << "two aligned parts at most";
}

TEST(Dense, SplitsProductsOnlyWhereTheBlasThreadsNone) {
  const EngineOptions engine;  // matrix_threads 0: decided by shape
  if (!configure_concurrent_blas()) GTEST_SKIP() << "this LibTorch's BLAS is not OpenBLAS";
  if (blas_threads() != 1) GTEST_SKIP() << "OPENBLAS_NUM_THREADS asks for more than one thread";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core";
  EXPECT_EQ(linear_parts(engine, 50, 576, 192), 2) << "one image's q, k, v projection";
  EXPECT_EQ(linear_parts(engine, 1, 10, 192), 1) << "the classifier head: too small to share";
  EXPECT_EQ(linear_parts(engine, 1600, 576, 192), 2) << "a batch's rows, with no BLAS threads to take them";
  {
    const ScopedBlasThreads two(2);
    if (blas_threads() == 2) {
      EXPECT_EQ(linear_parts(engine, 1600, 576, 192), 1) << "left to OpenBLAS's own threads";
    }
  }
}

// Forward and all three gradients of the split layer against at::linear, in
// double, with 1-3 parts (uneven and narrower-than-alignment splits included),
// with and without bias, an input that needs no gradient and a frozen weight.
TEST(Dense, SplitGradientsMatchTheLinearLayerInDouble) {
  at::manual_seed(6);
  for_each_split(
      {{32, 64, 50, true},
       {19, 96, 130, false},
       {24, 17, 7, true},
       {40, 200, 33, true, false},
       {48, 80, 20, false, true, false}},
      [](const EngineOptions& engine, const LayerCase& c, torch::nn::Linear& layer) {
        layer->weight.requires_grad_(c.weight_grad);
        const at::Tensor x0 = at::randn({2, c.rows, c.in}, at::kDouble);
        const at::Tensor dy = at::randn({2, c.rows, c.out}, at::kDouble);
        const at::Tensor x = x0.clone().requires_grad_(c.input_grad);
        const at::Tensor y = linear(engine, layer, x);
        if (blas_gemm_usable(x0)) {  // the engine's node at any split, one part included
          ASSERT_TRUE(y.grad_fn());
          EXPECT_NE(y.grad_fn()->name().find("SplitLinear"), std::string::npos) << y.grad_fn()->name();
        }
        (y * dy).sum().backward();
        const at::Tensor w = layer->weight.detach().clone().requires_grad_(c.weight_grad);
        const at::Tensor b = c.bias ? layer->bias.detach().clone().requires_grad_(true) : at::Tensor();
        const at::Tensor xr = x0.clone().requires_grad_(c.input_grad);
        const at::Tensor yr = at::linear(xr, w, b);
        EXPECT_LT(max_relative_error(y.detach(), yr.detach()), 1e-12);
        (yr * dy).sum().backward();
        if (c.weight_grad) {
          EXPECT_LT(max_relative_error(layer->weight.grad(), w.grad()), 1e-12);
        } else {
          EXPECT_FALSE(layer->weight.grad().defined());
        }
        if (c.bias) {
          EXPECT_LT(max_relative_error(layer->bias.grad(), b.grad()), 1e-12);
        }
        if (c.input_grad) {
          EXPECT_LT(max_relative_error(x.grad(), xr.grad()), 1e-12);
        } else {
          EXPECT_FALSE(x.grad().defined());
        }
      });
}

// linear_add with gradients adds the residual inside the product (the columns hold
// bias and residual before the BLAS adds to them): one node, whose output and
// gradients, the residual's included, are at::linear's plus the residual's, in
// double, with 1-3 parts; and a residual of another shape is added after it.
TEST(Dense, ResidualInsideTheProductMatchesTheLinearLayerPlusTheResidualInDouble) {
  at::manual_seed(8);
  for_each_split(
      {{32, 64, 50, true}, {19, 96, 130, false}, {24, 17, 7, true}},
      [](const EngineOptions& engine, const LayerCase& c, torch::nn::Linear& layer) {
        const at::Tensor x0 = at::randn({2, c.rows, c.in}, at::kDouble);
        const at::Tensor r0 = at::randn({2, c.rows, c.out}, at::kDouble);
        const at::Tensor dy = at::randn({2, c.rows, c.out}, at::kDouble);
        const at::Tensor x = x0.clone().requires_grad_(true), r = r0.clone().requires_grad_(true);
        const at::Tensor y = linear_add(engine, layer, x, r);
        ASSERT_TRUE(y.grad_fn());
        EXPECT_NE(y.grad_fn()->name().find("SplitLinear"), std::string::npos) << y.grad_fn()->name();
        (y * dy).sum().backward();
        const at::Tensor w = layer->weight.detach().clone().requires_grad_(true);
        const at::Tensor b = c.bias ? layer->bias.detach().clone().requires_grad_(true) : at::Tensor();
        const at::Tensor xr = x0.clone().requires_grad_(true), rr = r0.clone().requires_grad_(true);
        const at::Tensor yr = rr + at::linear(xr, w, b);
        EXPECT_LT(max_relative_error(y.detach(), yr.detach()), 1e-12);
        (yr * dy).sum().backward();
        EXPECT_LT(max_relative_error(layer->weight.grad(), w.grad()), 1e-12);
        if (c.bias) {
          EXPECT_LT(max_relative_error(layer->bias.grad(), b.grad()), 1e-12);
        }
        EXPECT_LT(max_relative_error(x.grad(), xr.grad()), 1e-12);
        EXPECT_LT(max_relative_error(r.grad(), rr.grad()), 1e-12);
      });
  // A residual broadcast along the rows is not the output's shape: added after the product.
  torch::nn::Linear layer(16, 24);
  layer->to(at::kDouble);
  const at::Tensor x = at::randn({2, 5, 16}, at::kDouble).requires_grad_(true);
  const at::Tensor r = at::randn({24}, at::kDouble).requires_grad_(true);
  const at::Tensor y = linear_add(EngineOptions{}, layer, x, r);
  EXPECT_LT(max_relative_error(y.detach(), (r + layer->forward(x)).detach()), 1e-12);
  y.sum().backward();
  EXPECT_LT(max_relative_error(r.grad(), at::full({24}, 10.0, at::kDouble)), 1e-12);
}

// With create_graph the split layer's gradients are differentiable too: a
// second-order gradient matches at::linear's.
TEST(Dense, SecondOrderGradientsMatchTheLinearLayerInDouble) {
  at::manual_seed(7);
  const EngineOptions engine = test_support::threads_options(2);
  torch::nn::Linear layer(32, 64);
  layer->to(at::kDouble);
  const at::Tensor x0 = at::randn({2, 50, 32}, at::kDouble), dy = at::randn({2, 50, 64}, at::kDouble);
  const at::Tensor v = at::randn({2, 50, 32}, at::kDouble);
  auto second_order = [&](const at::Tensor& x, const at::Tensor& y, const at::Tensor& w) {
    const at::Tensor dx = torch::autograd::grad({(y * dy).sum()}, {x}, {}, true, true)[0];
    return torch::autograd::grad({(dx * v).sum()}, {w})[0];
  };
  const at::Tensor x = x0.clone().requires_grad_(true);
  const at::Tensor split = second_order(x, linear(engine, layer, x), layer->weight);
  const at::Tensor w = layer->weight.detach().clone().requires_grad_(true);
  const at::Tensor xr = x0.clone().requires_grad_(true);
  const at::Tensor reference = second_order(xr, at::linear(xr, w, layer->bias.detach()), w);
  EXPECT_LT(max_relative_error(split, reference), 1e-12);
}

// linear_each with gradients: bias-free layers of one input as one node (LoR's
// shared and low-rank projections), one output left without a gradient. In double
// its outputs and gradients are at::linear's, first order (the raw products) and
// second order (create_graph: ATen's); in bf16 precision close to them.
struct GroupedLayers {
  explicit GroupedLayers(at::ScalarType type) {
    at::manual_seed(9);
    for (const int64_t out : {48, 24, 48, 9}) {
      layers.emplace_back(torch::nn::LinearOptions(kIn, out).bias(false));
      layers.back()->to(type);
      probes.push_back(at::randn({3, 17, out}, type));
    }
    for (auto& layer : layers) pointers.push_back(&layer);
    x0 = at::randn({3, 17, kIn}, type);
    v = at::randn({3, 17, kIn}, type);
  }
  // sum_i <y_i, probe_i> over every output but the third.
  at::Tensor loss(const std::vector<at::Tensor>& ys) const {
    at::Tensor total = at::zeros({}, ys[0].options());
    for (size_t i = 0; i < ys.size(); ++i)
      if (i != 2) total = total + (ys[i] * probes[i]).sum();
    return total;
  }
  // {outputs..., dL/dx, dL/dW_i..., d<dL/dx, v>/dW_0}: grouped (linear_each under
  // `engine`) or reference (at::linear).
  std::vector<at::Tensor> run(const EngineOptions& engine, bool grouped, bool second_order) {
    const at::Tensor x = x0.clone().requires_grad_(true);
    std::vector<at::Tensor> ws, ys;
    for (auto& layer : layers)
      ws.push_back(grouped ? layer->weight : layer->weight.detach().clone().requires_grad_(true));
    if (grouped)
      ys = linear_each(engine, pointers, x);
    else
      for (const at::Tensor& w : ws) ys.push_back(at::linear(x, w));
    std::vector<at::Tensor> wrt{x}, out;
    wrt.insert(wrt.end(), ws.begin(), ws.end());
    for (const at::Tensor& y : ys) out.push_back(y.detach());
    const std::vector<at::Tensor> grads =
        torch::autograd::grad({loss(ys)}, wrt, {}, true, second_order, true);
    for (size_t i = 0; i < grads.size(); ++i)  // the third weight's: zeros, or none
      out.push_back(grads[i].defined() ? grads[i].detach() : at::zeros_like(wrt[i]));
    if (second_order) out.push_back(torch::autograd::grad({(grads[0] * v).sum()}, {ws[0]})[0]);
    if (grouped) grad_fn = ys[0].grad_fn() ? ys[0].grad_fn()->name() : "";
    return out;
  }
  static constexpr int64_t kIn = 40;
  std::vector<torch::nn::Linear> layers;
  std::vector<torch::nn::Linear*> pointers;
  std::vector<at::Tensor> probes;
  at::Tensor x0, v;
  std::string grad_fn;
};

TEST(Dense, GroupedProjectionsMatchTheLinearLayersInDouble) {
  GroupedLayers g(at::kDouble);
  for (const bool second_order : {false, true})
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " thread(s)" + (second_order ? ", second order" : ""));
      const EngineOptions engine = test_support::threads_options(threads);
      const std::vector<at::Tensor> grouped = g.run(engine, true, second_order),
                                    reference = g.run(engine, false, second_order);
      EXPECT_NE(g.grad_fn.find("DenseEach"), std::string::npos) << g.grad_fn;
      ASSERT_EQ(grouped.size(), reference.size());
      for (size_t i = 0; i < grouped.size(); ++i)
        EXPECT_LT(max_relative_error(grouped[i], reference[i]), 1e-12) << "value " << i;
    }
  g.run(test_support::reference_options(), true, false);
  EXPECT_EQ(g.grad_fn.find("DenseEach"), std::string::npos) << "separate: " << g.grad_fn;
}

TEST(Dense, GroupedProjectionsInBf16PrecisionStayCloseToFp32) {
  SKIP_WITHOUT_BF16_PRODUCTS();
  GroupedLayers g(at::kFloat);
  const EngineOptions bf16 = with(EngineOptions{}, &EngineOptions::precision, DensePrecision::Bf16);
  const std::vector<at::Tensor> reference = g.run(bf16, false, false);
  const std::vector<at::Tensor> grouped = g.run(bf16, true, false);
  EXPECT_NE(g.grad_fn.find("DenseEach"), std::string::npos) << g.grad_fn;
  for (size_t i = 0; i < grouped.size(); ++i)
    EXPECT_LT(max_relative_error(grouped[i], reference[i]), 2e-2) << "value " << i;
}

TEST(HelperThreads, EveryPartRunsOnceFromConcurrentCallersAndErrorsComeBack) {
  std::atomic<long> total{0};
  auto caller = [&] {
    for (int round = 0; round < 500; ++round) {
      std::vector<int> runs(3, 0);
      run_parts(3, [&](int p) { ++runs[size_t(p)]; });
      for (int r : runs) ASSERT_EQ(r, 1);
      total += 3;
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(total.load(), 2 * 500 * 3);
  EXPECT_THROW(run_parts(2,
                         [](int p) {
                           if (p == 1) throw std::runtime_error("part 1 failed");
                         }),
               std::runtime_error);
  int after = 0;
  run_parts(2, [&](int p) {
    if (p == 1) after = 1;
  });  // the helper survives a failed part
  EXPECT_EQ(after, 1);
  std::atomic<int> nested{0};  // parts that split again run their own parts in turn
  run_parts(2, [&](int) { run_parts(3, [&](int) { ++nested; }); });
  EXPECT_EQ(nested.load(), 6);
}

// Every item exactly once, whatever the number of parts and items, and `next` is
// the item its part really took next (what the relative projections prefetch).
TEST(HelperThreads, ClaimedChunksRunEveryItemOnceAndNameEachPartsNextItem) {
  for (const int parts : {1, 2, 3, 4})
    for (const size_t n : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(5), size_t(17), size_t(172)}) {
      SCOPED_TRACE(std::to_string(parts) + " parts, " + std::to_string(n) + " items");
      std::vector<std::atomic<int>> runs(n);
      std::vector<std::vector<std::pair<size_t, size_t>>> taken(static_cast<size_t>(parts));  // (item, next)
      for_each_claimed(n, parts, 4, [&](size_t item, size_t next, int part) {
        ++runs[item];
        taken[size_t(part)].push_back({item, next});
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
      for (const auto& list : taken)
        for (size_t t = 0; t < list.size(); ++t)
          EXPECT_EQ(list[t].second, t + 1 < list.size() ? list[t + 1].first : n)
              << "next of item " << list[t].first;
    }
}

}  // namespace
}  // namespace translution
