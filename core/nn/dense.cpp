#include "nn/dense.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "nn/raw_gemm.h"
#include "util/helper_threads.h"

namespace translution {
namespace {

constexpr int64_t kColumnAlign = 16;  // one AVX-512 register of floats per part boundary

bool needs_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

template <typename T>
void split_product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out, int parts) {
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  const T *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>(), *bp = b.defined() ? b.data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  // Part p starts at its share of the columns rounded up to the alignment; part `parts` starts at N.
  auto start = [&](int p) { return std::min(N, (N * p / parts + kColumnAlign - 1) / kColumnAlign * kColumnAlign); };
  run_parts(parts, [&](int p) {
    const int64_t n0 = start(p), n1 = start(p + 1);
    if (n1 <= n0) return;
    raw_gemm_strided<T>(false, true, M, n1 - n0, K, xp, K, wp + n0 * K, K, op + n0, N);
    if (bp)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = n0; n < n1; ++n) op[m * N + n] += bp[n];
  });
}

}  // namespace

int dense_parts(int64_t rows, int64_t n, int64_t k) {
  int parts = matrix_threads();
  if (parts == 0) parts = one_image_split(rows) && rows * n * k >= (int64_t(1) << 20) ? 2 : 1;
  return int(std::max<int64_t>(1, std::min<int64_t>(parts, n / kColumnAlign)));
}

at::Tensor dense(torch::nn::Linear& layer, const at::Tensor& x) {
  const at::Tensor &w = layer->weight, &b = layer->bias;
  const bool grad = at::GradMode::is_enabled() && (needs_grad(x) || needs_grad(w) || needs_grad(b));
  if (grad || x.dim() < 1 || x.size(-1) != w.size(1) || x.scalar_type() != w.scalar_type() || !raw_gemm_usable(x) ||
      !raw_gemm_usable(w) || (b.defined() && !raw_gemm_usable(b)))
    return layer->forward(x);
  const int64_t N = w.size(0), K = w.size(1), M = x.numel() / std::max<int64_t>(K, 1);
  const int parts = dense_parts(M, N, K);
  if (parts <= 1 || M == 0 || K == 0) return layer->forward(x);
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = N;
  at::Tensor out = at::empty(sizes, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dense", [&] { split_product<scalar_t>(x, w, b, out, parts); });
  return out;
}

}  // namespace translution
