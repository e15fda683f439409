#include "nn/dense.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/autograd.h>

#include "nn/raw_gemm.h"
#include "util/helper_threads.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kColumnAlign = 16;  // one AVX-512 register of floats per part boundary

bool needs_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

// Part p of `parts` covers [start(p), start(p + 1)) of n: its share rounded up to the alignment.
int64_t part_start(int64_t n, int p, int parts) {
  return std::min(n, (n * p / parts + kColumnAlign - 1) / kColumnAlign * kColumnAlign);
}

// out [M x N] = x [M x K] w^T (+ b), the columns of out split over the parts.
template <typename T>
void split_product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out, int parts) {
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  const T *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>(), *bp = b.defined() && b.numel() ? b.data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  run_parts(parts, [&](int p) {
    const int64_t n0 = part_start(N, p, parts), n1 = part_start(N, p + 1, parts);
    if (n1 <= n0) return;
    raw_gemm_strided<T>(false, true, M, n1 - n0, K, xp, K, wp + n0 * K, K, op + n0, N);
    if (bp)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = n0; n < n1; ++n) op[m * N + n] += bp[n];
  });
}

// Both gradients in one pass over the parts: dx [M x K] = dy w, split by its
// columns, and dw [N x K] = dy^T x, split by its rows (either may be skipped).
template <typename T>
void split_gradients(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w, at::Tensor* dx, at::Tensor* dw,
                     int parts) {
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  const T *dyp = dy.data_ptr<T>(), *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>();
  T* dxp = dx ? dx->data_ptr<T>() : nullptr;
  T* dwp = dw ? dw->data_ptr<T>() : nullptr;
  run_parts(parts, [&](int p) {
    const int64_t k0 = part_start(K, p, parts), k1 = part_start(K, p + 1, parts);
    if (dxp && k1 > k0) raw_gemm_strided<T>(false, false, M, k1 - k0, N, dyp, N, wp + k0, K, dxp + k0, K);
    const int64_t n0 = part_start(N, p, parts), n1 = part_start(N, p + 1, parts);
    if (dwp && n1 > n0) raw_gemm_strided<T>(true, false, n1 - n0, K, M, dyp + n0, N, xp, K, dwp + n0 * K, K);
  });
}

at::Tensor product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int parts) {
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  at::Tensor out = at::empty(sizes, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dense", [&] { split_product<scalar_t>(x, w, b, out, parts); });
  return out;
}

// The linear layer with its products split over the cores, forward and backward.
// b is empty when the layer has no bias (autograd functions take no undefined inputs).
class SplitLinear : public torch::autograd::Function<SplitLinear> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                            int64_t parts) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["parts"] = parts;
    ctx->saved_data["bias"] = b.numel() > 0;
    return product(x, w, b, int(parts));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t N = w.size(0), K = w.size(1);
    at::Tensor dx, dw, db;
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = dy.reshape({-1, N}).sum(0);
    if (at::GradMode::is_enabled()) {  // create_graph: the gradients must be differentiable themselves
      const at::Tensor dy2 = dy.reshape({-1, N});
      if (ctx->needs_input_grad(0)) dx = dy2.mm(w).view(x.sizes());
      if (ctx->needs_input_grad(1)) dw = dy2.t().mm(x.reshape({-1, K}));
      return {dx, dw, db, at::Tensor()};
    }
    if (ctx->needs_input_grad(0)) dx = at::empty_like(x, at::MemoryFormat::Contiguous);
    if (ctx->needs_input_grad(1)) dw = at::empty_like(w, at::MemoryFormat::Contiguous);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dense_backward", [&] {
      split_gradients<scalar_t>(dy, x, w, dx.defined() ? &dx : nullptr, dw.defined() ? &dw : nullptr,
                                int(ctx->saved_data["parts"].toInt()));
    });
    return {dx, dw, db, at::Tensor()};
  }
};

}  // namespace

int dense_parts(int64_t rows, int64_t n, int64_t k) {
  int parts = matrix_threads();
  if (parts == 0) parts = engine_splits_products() && rows * n * k >= (int64_t(1) << 20) ? 2 : 1;
  return int(std::max<int64_t>(1, std::min<int64_t>(parts, n / kColumnAlign)));
}

at::Tensor dense(torch::nn::Linear& layer, const at::Tensor& x) {
  const at::Tensor &w = layer->weight, &b = layer->bias;
  if (x.dim() < 1 || x.size(-1) != w.size(1) || x.scalar_type() != w.scalar_type() || !raw_gemm_usable(x) ||
      !raw_gemm_usable(w) || (b.defined() && (!raw_gemm_usable(b) || b.scalar_type() != w.scalar_type())))
    return layer->forward(x);
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / std::max<int64_t>(K, 1);
  const int parts = dense_parts(M, N, K);
  if (parts <= 1 || M == 0 || K == 0) return layer->forward(x);
  const bool grad = at::GradMode::is_enabled() && (needs_grad(x) || needs_grad(w) || needs_grad(b));
  if (!grad) return product(x, w, b, parts);
  return SplitLinear::apply(x, w, b.defined() ? b : at::empty({0}, w.options()), int64_t(parts));
}

}  // namespace translution
