#include "cpu/linear.h"

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/autograd.h>

#include "cpu/avx512_gemm.h"
#include "cpu/bf16_gemm.h"
#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/inference_passes.h"
#include "cpu/training_passes.h"
#include "cpu/transposed_weights.h"
#include "cpu/vector_math.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/kept_options.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kColumnAlign = 16;  // one AVX-512 register of floats per part boundary

enum class Epilogue { kNone, kGelu, kAdd };  // what each part does to its columns after its product

bool needs_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

// Part p of `parts` covers [start(p), start(p + 1)) of n: its share rounded up to the alignment.
int64_t part_start(int64_t n, int p, int parts) {
  return std::min(n, (n * p / parts + kColumnAlign - 1) / kColumnAlign * kColumnAlign);
}

// Columns per BLAS call in one image's product (at most 64 rows), or 0: the
// whole part in one call. OpenBLAS packs both operands of a GEMM, on every call,
// unless its small-matrix kernels take it, and for one image's few rows packing
// the weight is much of the product's time (docs/performance.md, "The engine's
// passes instead of LibTorch's small ops"). The bounds below are pinned to
// OpenBLAS 0.3.21, the one Debian's LibTorch links: for this product's form (the
// weight transposed) its Skylake-X sgemm_small_kernel_permit takes at most 1200
// outputs, 10^6 multiply-adds and k >= 32. Another version may permit other
// shapes; with it, or another BLAS, the slices are merely smaller calls.
int64_t unpacked_slice(int64_t rows, int64_t k) {
  if (rows > kAvx512GemmMostRows || rows <= 0 || k < 32) return 0;
  const int64_t width = std::min<int64_t>(1200 / rows, 1000000 / (rows * k));
  return width >= 16 ? width : 0;
}

// Columns [n0, n1) of out [M x N] = x [M x K] w^T (+ b) (+ r, residual rows [M x N]):
// with wt (w^T in strips of kWeightStrip columns, cpu/transposed_weights.h) the
// engine's row kernel strip by strip, else BLAS calls of `slice` columns each (0:
// one call). The BLAS adds its product to columns that already hold b + r: one
// pass writing them instead of the BLAS zeroing them first (OpenBLAS's beta = 0)
// and another adding b and r afterwards (docs/performance.md). The
// row kernel's columns, which it overwrites, get b and r after it.
template <typename T>
void product_columns(const T* xp, int64_t M, int64_t K, const T* wp, const T* bp, const T* rp, T* op,
                     int64_t N, int64_t n0, int64_t n1, int64_t slice, const T* wt = nullptr) {
  int64_t blas_end = n1;  // columns [n0, blas_end) go to the BLAS
  if constexpr (std::is_same_v<T, float>) {
    if (wt) {
      // A part starting inside a strip takes the rest of that strip from the BLAS,
      // then whole strips (the last maybe narrower) on the row kernel, prefetching
      // the next strip while it computes.
      const int64_t first = (n0 + kWeightStrip - 1) / kWeightStrip;
      blas_end = std::min(n1, first * kWeightStrip);
      for (int64_t s = first; s * kWeightStrip < n1; ++s) {
        const int64_t c0 = s * kWeightStrip, width = std::min(n1 - c0, kWeightStrip);
        const T* next = c0 + kWeightStrip < n1 ? wt + (s + 1) * K * kWeightStrip : nullptr;
        avx512_gemm(M, width, K, xp, K, wt + s * K * kWeightStrip, kWeightStrip, op + c0, N, next,
                    int64_t(sizeof(T)) * K * kWeightStrip);
      }
    }
  }
  const bool added = bp || rp;
  if (added)  // one loop per case, each vectorized (a test inside it kept the compiler from that)
    for (int64_t m = 0; m < M; ++m) {
      T* row = op + m * N;
      const T* r = rp ? rp + m * N : nullptr;
      if (r && bp)
        for (int64_t n = n0; n < blas_end; ++n) row[n] = r[n] + bp[n];
      else if (r)
        std::copy(r + n0, r + blas_end, row + n0);
      else
        std::copy(bp + n0, bp + blas_end, row + n0);
    }
  const int64_t step = slice > 0 ? slice : std::max<int64_t>(blas_end - n0, 1);
  for (int64_t c0 = n0; c0 < blas_end; c0 += step)
    blas_gemm_strided<T>(false, true, M, std::min(blas_end, c0 + step) - c0, K, xp, K, wp + c0 * K, K,
                         op + c0, N, added);
  if (added)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = blas_end; n < n1; ++n) {
        if (bp) op[m * N + n] += bp[n];
        if (rp) op[m * N + n] += rp[m * N + n];
      }
}

// w^T for one image's product on the row kernel (at most kAvx512GemmMostRows rows,
// float, a forward without gradients in the engine's passes), else undefined.
at::Tensor row_kernel_weight(const at::Tensor& w, int64_t rows, bool inference) {
  if (!inference || rows > kAvx512GemmMostRows || !avx512_gemm_available()) return at::Tensor();
  return transposed_weight(w);
}

template <typename T>
const T* data_or_null(const at::Tensor& t) {
  if constexpr (std::is_same_v<T, float>) return t.defined() ? t.data_ptr<float>() : nullptr;
  return nullptr;
}

// out [M x N] = x [M x K] w^T (+ b), then the epilogue, the columns of out split over the parts.
// inference: a forward without gradients, whose one-image products may read w^T (row_kernel_weight).
template <typename T>
void split_product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out, int parts,
                   Epilogue epilogue, const at::Tensor& residual, bool inference) {
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  const T *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>(),
          *bp = b.defined() && b.numel() ? b.data_ptr<T>() : nullptr;
  const T* rp = epilogue == Epilogue::kAdd ? residual.data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  const int64_t slice = unpacked_slice(M, K);
  const at::Tensor wt = row_kernel_weight(w, M, inference);  // held until every part is done
  const T* wtp = data_or_null<T>(wt);
  run_parts(parts, [&](int p) {
    const int64_t n0 = part_start(N, p, parts), n1 = part_start(N, p + 1, parts);
    if (n1 <= n0) return;
    product_columns(xp, M, K, wp, bp, rp, op, N, n0, n1, slice, wtp);
    if (epilogue == Epilogue::kGelu)
      for (int64_t m = 0; m < M; ++m) gelu_in_place(op + m * N + n0, n1 - n0);
  });
}

// Both gradients in one pass over the parts: dx [M x K] = dy w, split by its
// columns, and dw [N x K] = dy^T x, split by its rows (either may be skipped).
template <typename T>
void split_gradients(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w, at::Tensor* dx,
                     at::Tensor* dw, int parts) {
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  const T *dyp = dy.data_ptr<T>(), *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>();
  T* dxp = dx ? dx->data_ptr<T>() : nullptr;
  T* dwp = dw ? dw->data_ptr<T>() : nullptr;
  run_parts(parts, [&](int p) {
    const int64_t k0 = part_start(K, p, parts), k1 = part_start(K, p + 1, parts);
    if (dxp && k1 > k0) blas_gemm_strided<T>(false, false, M, k1 - k0, N, dyp, N, wp + k0, K, dxp + k0, K);
    const int64_t n0 = part_start(N, p, parts), n1 = part_start(N, p + 1, parts);
    if (dwp && n1 > n0) blas_gemm_strided<T>(true, false, n1 - n0, K, M, dyp + n0, N, xp, K, dwp + n0 * K, K);
  });
}

std::vector<int64_t> output_sizes(const at::Tensor& x, int64_t n) {
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = n;
  return sizes;
}

at::Tensor product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int parts, bool inference,
                   Epilogue epilogue = Epilogue::kNone, const at::Tensor& residual = {}) {
  at::Tensor out = at::empty(output_sizes(x, w.size(0)), x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dense", [&] {
    split_product<scalar_t>(x, w, b, out, parts, epilogue, residual, inference);
  });
  return out;
}

// Whether this layer's products with gradients run in bfloat16 (cpu/bf16_gemm.h):
// CPU float memory read in place, whether or not a BLAS is there or switched on.
bool bf16_tensor(const at::Tensor& t) {
  return t.is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}
bool bf16_applies(const EngineOptions& engine, const at::Tensor& x, const at::Tensor& w,
                  const at::Tensor& b) {
  return engine.precision == DensePrecision::Bf16 && x.dim() >= 1 && w.dim() == 2 &&
         x.size(-1) == w.size(1) && x.numel() > 0 && w.size(1) > 0 && bf16_tensor(x) && bf16_tensor(w) &&
         (!b.defined() || bf16_tensor(b)) && bf16_gemm_available();
}

// out [M x N] = x [M x K] w^T (+ b), the product in bfloat16 with fp32 sums.
at::Tensor bf16_product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, Bf16Run run) {
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  at::Tensor out = at::empty(output_sizes(x, N), x.options());
  bf16_gemm(false, true, M, N, K, x.data_ptr<float>(), K, w.data_ptr<float>(), K, out.data_ptr<float>(), N,
            run, b.numel() ? b.data_ptr<float>() : nullptr);
  return out;
}

// The linear layer with its products split over the cores (or on one, parts = 1),
// forward and backward, and optionally a residual added: x w^T + b + residual.
// b and residual are empty when absent (autograd functions take no undefined inputs).
class SplitLinear : public torch::autograd::Function<SplitLinear> {
 public:
  // bf16: both directions' products in bfloat16 (cpu/bf16_gemm.h; no residual) as
  // bf16_run(engine) says, else fp32 split into `parts`; a differentiable backward
  // (create_graph) is LibTorch's fp32 ops either way.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b, const at::Tensor& residual, int64_t parts, bool bf16,
                            const EngineOptions& engine) {
    ctx->save_for_backward({x, w});
    keep_options(ctx, engine);
    ctx->saved_data["parts"] = parts;
    ctx->saved_data["bias"] = b.numel() > 0;
    ctx->saved_data["residual"] = residual.numel() > 0;
    ctx->saved_data["bf16"] = bf16;
    if (bf16 && residual.numel() > 0)
      throw Error("internal: SplitLinear adds no residual to bfloat16 products");
    if (bf16) return bf16_product(x, w, b, bf16_run(engine));
    return residual.numel() > 0 ? product(x, w, b, int(parts), false, Epilogue::kAdd, residual)
                                : product(x, w, b, int(parts), false);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t N = w.size(0), K = w.size(1);
    at::Tensor dx, dw, db;
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = dy.reshape({-1, N}).sum(0);
    const at::Tensor dres =
        ctx->saved_data["residual"].toBool() && ctx->needs_input_grad(3) ? grads[0] : at::Tensor();
    if (at::GradMode::is_enabled()) {  // create_graph: the gradients must be differentiable themselves
      const at::Tensor dy2 = dy.reshape({-1, N});
      if (ctx->needs_input_grad(0)) dx = dy2.mm(w).view(x.sizes());
      if (ctx->needs_input_grad(1)) dw = dy2.t().mm(x.reshape({-1, K}));
      return {dx, dw, db, dres, at::Tensor(), at::Tensor(), at::Tensor()};
    }
    if (ctx->needs_input_grad(0)) dx = at::empty_like(x, at::MemoryFormat::Contiguous);
    if (ctx->needs_input_grad(1)) dw = at::empty_like(w, at::MemoryFormat::Contiguous);
    const int parts = int(ctx->saved_data["parts"].toInt());
    if (ctx->saved_data["bf16"].toBool()) {
      const int64_t M = x.numel() / K;
      const float *dyp = dy.data_ptr<float>(), *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();
      const Bf16Run run = bf16_run(kept_options(ctx));
      if (dx.defined()) bf16_gemm(false, false, M, K, N, dyp, N, wp, K, dx.data_ptr<float>(), K, run);
      if (dw.defined()) bf16_gemm(true, false, N, K, M, dyp, N, xp, K, dw.data_ptr<float>(), K, run);
      return {dx, dw, db, dres, at::Tensor(), at::Tensor(), at::Tensor()};
    }
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "linear_backward", [&] {
      split_gradients<scalar_t>(dy, x, w, dx.defined() ? &dx : nullptr, dw.defined() ? &dw : nullptr, parts);
    });
    return {dx, dw, db, dres, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

int linear_parts(const EngineOptions& engine, int64_t rows, int64_t n, int64_t k) {
  int parts = matrix_threads(engine);
  if (parts == 0) parts = engine_splits_products() && rows * n * k >= (int64_t(1) << 20) ? 2 : 1;
  return int(std::max<int64_t>(1, std::min<int64_t>(parts, n / kColumnAlign)));
}

namespace {

// The epilogue after the product, where the product did not run it (with gradients: cpu/training_passes).
at::Tensor finish(const EngineOptions& engine, at::Tensor y, Epilogue epilogue, const at::Tensor& residual) {
  if (epilogue == Epilogue::kGelu) return trained_gelu(engine, y);
  if (epilogue == Epilogue::kAdd) return residual + y;
  return y;
}

at::Tensor linear_with(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x,
                       Epilogue epilogue, const at::Tensor& residual) {
  const auto finish = [&](const at::Tensor& y) { return translution::finish(engine, y, epilogue, residual); };
  if (engine.reference) return finish(layer->forward(x));
  const at::Tensor &w = layer->weight, &b = layer->bias;
  const bool grad = at::GradMode::is_enabled() && (needs_grad(x) || needs_grad(w) || needs_grad(b));
  if (grad && bf16_applies(engine, x, w, b)) {
    const at::Tensor none = at::empty({0}, w.options());
    return finish(SplitLinear::apply(x, w, b.defined() ? b : none, none, int64_t(1), true, engine));
  }
  if (x.dim() < 1 || x.size(-1) != w.size(1) || x.scalar_type() != w.scalar_type() || !blas_gemm_usable(x) ||
      !blas_gemm_usable(w) || (b.defined() && (!blas_gemm_usable(b) || b.scalar_type() != w.scalar_type())))
    return finish(layer->forward(x));
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / std::max<int64_t>(K, 1);
  if (M == 0 || K == 0) return finish(layer->forward(x));
  const int parts = linear_parts(engine, M, N, K);
  // Without gradients the epilogue runs inside each part, on its columns, while they are in cache.
  if (!grad && fused_inference_applies(engine, {&x, &w, &b, &residual}) &&
      (epilogue != Epilogue::kAdd || residual.sizes() == output_sizes(x, N)))
    return product(x, w, b, parts, true, epilogue, residual);
  if (grad) {
    const at::Tensor none = at::empty({0}, w.options());
    // The engine's node at any split, one core's share of a split training step
    // included, the residual inside the product where it has the output's shape.
    const bool add = epilogue == Epilogue::kAdd && blas_gemm_usable(residual) &&
                     residual.scalar_type() == x.scalar_type() && residual.sizes() == output_sizes(x, N);
    const at::Tensor y = SplitLinear::apply(x, w, b.defined() ? b : none, add ? residual : none,
                                            int64_t(parts), false, engine);
    return add ? y : finish(y);
  }
  if (parts <= 1) return finish(layer->forward(x));
  return finish(product(x, w, b, parts, true));
}

}  // namespace

at::Tensor linear(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x) {
  return linear_with(engine, layer, x, Epilogue::kNone, {});
}

namespace {

// Each layer's product as a column range of one wide product: part p covers the
// same share of the layers' columns taken together as split_product's parts do.
template <typename T>
void split_products(const std::vector<torch::nn::Linear*>& layers, const at::Tensor& x,
                    std::vector<at::Tensor>& out, int64_t total, int parts) {
  const int64_t K = x.size(-1), M = x.numel() / K;
  const T* xp = x.data_ptr<T>();
  const int64_t slice = unpacked_slice(M, K);
  std::vector<at::Tensor> wt;  // held until every part is done
  for (torch::nn::Linear* layer : layers) wt.push_back(row_kernel_weight((*layer)->weight, M, true));
  run_parts(parts, [&](int p) {
    const int64_t g0 = part_start(total, p, parts), g1 = part_start(total, p + 1, parts);
    int64_t first = 0;  // the layer's first column in the wide product
    for (size_t i = 0; i < layers.size(); first += (*layers[i])->weight.size(0), ++i) {
      const at::Tensor &w = (*layers[i])->weight, &b = (*layers[i])->bias;
      const int64_t N = w.size(0), n0 = std::max(g0 - first, int64_t(0)), n1 = std::min(g1 - first, N);
      if (n1 <= n0) continue;
      product_columns(xp, M, K, w.data_ptr<T>(), b.defined() && b.numel() ? b.data_ptr<T>() : nullptr,
                      static_cast<const T*>(nullptr), out[i].data_ptr<T>(), N, n0, n1, slice,
                      data_or_null<T>(wt[i]));
    }
  });
}

// Bias-free layers of one input with gradients, as one autograd node. Forward
// multiplies each layer as linear() would; backward lays the layers' output
// gradients side by side, so that x's gradient is one product over all their
// columns (instead of a product per layer, LoR's 24-wide ones of inner dimension
// 24, and autograd's sum of six [B, N, C] gradients) and the weights' gradients
// one product whose rows are the layers'.
class DenseEach : public torch::autograd::Function<DenseEach> {
 public:
  // parts: the backward's split (its products span every layer's columns); each forward
  // product splits as linear() would split it alone (layer_parts; bf16: bf16_run(engine)).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList weights,
                               int64_t parts, std::vector<int64_t> layer_parts, bool bf16,
                               const EngineOptions& engine) {
    keep_options(ctx, engine);
    const at::Tensor none = at::empty({0}, x.options());
    std::vector<at::Tensor> saved{x};
    variable_list out;
    for (size_t i = 0; i < weights.size(); ++i) {
      const at::Tensor& w = weights[i];
      out.push_back(bf16 ? bf16_product(x, w, none, bf16_run(engine))
                         : product(x, w, none, int(layer_parts.at(i)), false));
      saved.push_back(w);
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["parts"] = parts;
    ctx->saved_data["bf16"] = bf16;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const std::vector<at::Tensor> weights(saved.begin() + 1, saved.end());
    const int64_t K = x.size(-1), M = x.numel() / K;
    const int parts = int(ctx->saved_data["parts"].toInt());
    std::vector<at::Tensor> dys;  // every one defined: autograd gives zeros for unused outputs
    for (size_t i = 0; i < weights.size(); ++i) dys.push_back(grads[i].reshape({M, weights[i].size(0)}));
    const at::Tensor dy = at::cat(dys, 1), w = at::cat(weights, 0);  // [M, total], [total, K]
    const int64_t total = w.size(0);
    bool weight_grad = false;
    for (size_t i = 0; i < weights.size(); ++i) weight_grad = weight_grad || ctx->needs_input_grad(1 + i);
    at::Tensor dx, dw;
    if (at::GradMode::is_enabled()) {  // create_graph: the gradients must be differentiable themselves
      if (ctx->needs_input_grad(0)) dx = dy.mm(w).view(x.sizes());
      if (weight_grad) dw = dy.t().mm(x.reshape({M, K}));
    } else {
      if (ctx->needs_input_grad(0)) dx = at::empty_like(x, at::MemoryFormat::Contiguous);
      if (weight_grad) dw = at::empty({total, K}, x.options());
      if (ctx->saved_data["bf16"].toBool()) {
        const float *dyp = dy.data_ptr<float>(), *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();
        const Bf16Run run = bf16_run(kept_options(ctx));
        if (dx.defined())
          bf16_gemm(false, false, M, K, total, dyp, total, wp, K, dx.data_ptr<float>(), K, run);
        if (dw.defined())
          bf16_gemm(true, false, total, K, M, dyp, total, xp, K, dw.data_ptr<float>(), K, run);
      } else {
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "linear_each_backward", [&] {
          split_gradients<scalar_t>(dy, x, w, dx.defined() ? &dx : nullptr, dw.defined() ? &dw : nullptr,
                                    parts);
        });
      }
    }
    // Each weight's gradient is its rows of dw (views sharing dw's memory).
    variable_list result{dx};
    int64_t first = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      const int64_t N = weights[i].size(0);
      result.push_back(dw.defined() && ctx->needs_input_grad(1 + i) ? dw.narrow(0, first, N) : at::Tensor());
      first += N;
    }
    result.push_back(at::Tensor());  // parts
    result.push_back(at::Tensor());  // layer_parts
    result.push_back(at::Tensor());  // bf16
    result.push_back(at::Tensor());  // engine
    return result;
  }
};

// DenseEach's case: gradients recorded, no bias, and the products linear() would
// run on raw memory (bf16: every layer's).

bool linear_each_node_applies(const EngineOptions& engine, const std::vector<torch::nn::Linear*>& layers,
                              const at::Tensor& x, bool* bf16) {
  if (!at::GradMode::is_enabled() || layers.empty() || x.dim() < 1 || x.numel() == 0 || !x.is_contiguous())
    return false;
  bool all_bf16 = true, raw = blas_gemm_usable(x), grad = needs_grad(x);
  for (torch::nn::Linear* layer : layers) {
    const at::Tensor &w = (*layer)->weight, &b = (*layer)->bias;
    if ((b.defined() && b.numel() > 0) || w.dim() != 2 || w.size(1) != x.size(-1) ||
        w.scalar_type() != x.scalar_type())
      return false;
    all_bf16 = all_bf16 && bf16_applies(engine, x, w, b);
    raw = raw && blas_gemm_usable(w);
    grad = grad || needs_grad(w);
  }
  *bf16 = all_bf16;
  return grad && (all_bf16 || raw);
}

}  // namespace

std::vector<at::Tensor> linear_each(const EngineOptions& engine,
                                    const std::vector<torch::nn::Linear*>& layers, const at::Tensor& x) {
  std::vector<at::Tensor> out;
  if (engine.reference) {
    for (torch::nn::Linear* layer : layers) out.push_back((*layer)->forward(x));
    return out;
  }
  bool bf16 = false;
  if (linear_each_node_applies(engine, layers, x, &bf16)) {
    std::vector<at::Tensor> weights;
    std::vector<int64_t> layer_parts;
    int64_t total = 0;
    const int64_t K = x.size(-1), M = x.numel() / K;
    for (torch::nn::Linear* layer : layers) {
      weights.push_back((*layer)->weight);
      total += (*layer)->weight.size(0);
      layer_parts.push_back(linear_parts(engine, M, (*layer)->weight.size(0), K));
    }
    return DenseEach::apply(x, at::TensorList(weights), int64_t(linear_parts(engine, M, total, K)),
                            layer_parts, bf16, engine);
  }
  bool fused = x.dim() >= 1 && x.numel() > 0 && blas_gemm_usable(x);
  int64_t total = 0;
  for (torch::nn::Linear* layer : layers) {
    const at::Tensor &w = (*layer)->weight, &b = (*layer)->bias;
    fused = fused && w.dim() == 2 && w.size(1) == x.size(-1) &&
            fused_inference_applies(engine, {&x, &w, &b}) && blas_gemm_usable(w) &&
            (!b.defined() || blas_gemm_usable(b));
    total += w.size(0);
  }
  if (!fused) {
    for (torch::nn::Linear* layer : layers) out.push_back(linear(engine, *layer, x));
    return out;
  }
  const int64_t K = x.size(-1), M = x.numel() / K;
  for (torch::nn::Linear* layer : layers)
    out.push_back(at::empty(output_sizes(x, (*layer)->weight.size(0)), x.options()));
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "linear_each", [&] {
    split_products<scalar_t>(layers, x, out, total, linear_parts(engine, M, total, K));
  });
  return out;
}

at::Tensor linear_gelu(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x) {
  return linear_with(engine, layer, x, Epilogue::kGelu, {});
}

at::Tensor linear_add(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x,
                      const at::Tensor& residual) {
  return linear_with(engine, layer, x, Epilogue::kAdd, residual);
}

}  // namespace translution
