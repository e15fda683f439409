#include "nn/relative_projection.h"

#include <ATen/ATen.h>

#include "cpu/gather_rows.h"
#include "cpu/pair_matrices.h"
#include "cpu/projection_algorithms.h"

namespace translution {

// [N, B, ...] gradient from per-row contributions.
at::Tensor scatter_rows(const at::Tensor& rows_grad, const at::Tensor& index, int64_t tokens) {
  std::vector<int64_t> sizes = rows_grad.sizes().vec();
  sizes[0] = tokens;
  return at::zeros(sizes, rows_grad.options()).index_add_(0, index, rows_grad);
}

// S[rows of e] = X[rows of e] W[e] for every matrix e: one product each, M = B n_e.
at::Tensor project_rows(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                        const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16, bool copies) {
  const Bf16Bits* w16 = weight_copy(engine, bank, xt, bf16, copies);
  if (at::Tensor fast = engine_projection(engine, xt, rows, bank, offset, bf16, w16); fast.defined())
    return fast;
  const int64_t R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  at::Tensor out = at::empty({R, B, D}, xt.options());  // [R, B, D]
  at::Tensor out2 = out.view({R * B, D});
  const at::Tensor g2 = gather_rows(xt, rows).view({R * B, C});  // [R B, C]: X[row r]
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    const int64_t n = offset[e + 1] - offset[e];
    if (n == 0) continue;
    at::Tensor chunk = out2.narrow(0, offset[e] * B, n * B);
    at::mm_out(chunk, g2.narrow(0, offset[e] * B, n * B), bank.select(0, int64_t(e)));
  }
  return out;
}

// dW[e] = X[rows of e]^T dS[rows of e] and dX[rows of e] = dS[rows of e] W[e]^T, per matrix.
std::pair<at::Tensor, at::Tensor> project_rows_backward(const EngineOptions& engine, const at::Tensor& xt,
                                                        const at::Tensor& rows, const at::Tensor& bank,
                                                        const std::vector<int64_t>& offset,
                                                        const at::Tensor& ds, bool bf16) {
  if (auto fast = engine_projection_backward(engine, xt, rows, bank, offset, ds, bf16); fast.first.defined())
    return fast;
  const int64_t N = xt.size(0), R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  const at::Tensor ds2 = ds.reshape({R * B, D}).contiguous();
  // Every matrix with pairs is overwritten below; only the unused ones need zeros.
  at::Tensor dbank = bank_gradient_buffer(bank, offset);
  const at::Tensor g2 = gather_rows(xt, rows).view({R * B, C});
  at::Tensor dg = at::empty({R, B, C}, xt.options());
  at::Tensor dg2 = dg.view({R * B, C});
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    const int64_t n = offset[e + 1] - offset[e];
    if (n == 0) continue;
    const at::Tensor g_e = g2.narrow(0, offset[e] * B, n * B), ds_e = ds2.narrow(0, offset[e] * B, n * B);
    at::Tensor dw = dbank.select(0, int64_t(e)), dg_e = dg2.narrow(0, offset[e] * B, n * B);
    at::mm_out(dw, g_e.t(), ds_e);
    at::mm_out(dg_e, ds_e, bank.select(0, int64_t(e)).t());
  }
  return {scatter_rows(dg, rows, N), dbank};
}

}  // namespace translution
