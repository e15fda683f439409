#include "nn/relative_projection.h"

#include <map>
#include <mutex>
#include <string>

#include <ATen/ATen.h>

#include "cpu/bf16_weights.h"
#include "cpu/gather_rows.h"
#include "cpu/pair_matrices.h"

namespace translution {
namespace {

// S[rows of e] = X[rows of e] W[e] for every matrix: one GEMM each, M = B n_e.
// w16: the bank's bfloat16 copy to read instead of it (project_rows finds it), or null.
at::Tensor project_sorted(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                          const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16,
                          const Bf16Bits* w16) {
  if (at::Tensor fast = sorted_projection(engine, xt, rows, bank, offset, bf16, w16); fast.defined())
    return fast;
  const int64_t R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  at::Tensor out = at::empty({R, B, D}, xt.options());  // [R, B, D]
  at::Tensor out2 = out.view({R * B, D});
  const at::Tensor g2 = gather_rows(xt, rows).view({R * B, C});
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    const int64_t n = offset[e + 1] - offset[e];
    if (n == 0) continue;
    at::Tensor chunk = out2.narrow(0, offset[e] * B, n * B);
    at::mm_out(chunk, g2.narrow(0, offset[e] * B, n * B), bank.select(0, int64_t(e)));
  }
  return out;
}

// Given dS for sorted rows: the gradients of the bank and of X ([N, B, C]), per matrix.
std::pair<at::Tensor, at::Tensor> project_sorted_backward(const EngineOptions& engine, const at::Tensor& xt,
                                                          const at::Tensor& rows, const at::Tensor& bank,
                                                          const std::vector<int64_t>& offset,
                                                          const at::Tensor& ds_in, bool bf16) {
  if (auto fast = sorted_projection_backward(engine, xt, rows, bank, offset, ds_in, bf16);
      fast.first.defined())
    return fast;
  const int64_t N = xt.size(0), R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  const at::Tensor ds2 = ds_in.reshape({R * B, D}).contiguous();
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

// The entry of every sorted row ([R] int64), on `device`. Made once per order and
// device: a copy from the host on every call would wait on the GPU's stream, and
// could not be captured in a CUDA graph (infer/graphed_forward.h). The cache is
// never destroyed, so no device tensor outlives the CUDA runtime at exit.
const at::Tensor& entry_of_rows(const std::vector<int64_t>& offset, const c10::Device& device) {
  static std::mutex lock;
  static auto* cache = new std::map<std::pair<std::vector<int64_t>, std::string>, at::Tensor>();
  const std::lock_guard<std::mutex> hold(lock);
  at::Tensor& entries = (*cache)[{offset, device.str()}];
  if (!entries.defined()) {
    std::vector<int64_t> entry;
    for (size_t e = 0; e + 1 < offset.size(); ++e)
      entry.insert(entry.end(), size_t(offset[e + 1] - offset[e]), int64_t(e));
    entries = at::tensor(entry, at::kLong).to(device);
  }
  return entries;
}

// Position of (row r, batch b) in the all-token projection [N, B, E, D] viewed as rows of D.
at::Tensor all_token_index(const at::Tensor& rows, const std::vector<int64_t>& offset, int64_t B) {
  const int64_t E = int64_t(offset.size()) - 1;
  const at::Tensor entry_of_row = entry_of_rows(offset, rows.device());
  const at::Tensor b = at::arange(B, rows.options());
  return ((rows.unsqueeze(1) * B + b.unsqueeze(0)) * E + entry_of_row.unsqueeze(1)).reshape({-1});
}

}  // namespace

// [N, B, ...] gradient from per-row contributions.
at::Tensor scatter_rows(const at::Tensor& rows_grad, const at::Tensor& index, int64_t tokens) {
  std::vector<int64_t> sizes = rows_grad.sizes().vec();
  sizes[0] = tokens;
  return at::zeros(sizes, rows_grad.options()).index_add_(0, index, rows_grad);
}

const Bf16Bits* weight_copy(const EngineOptions& engine, const at::Tensor& bank, const at::Tensor& xt,
                            bool bf16, bool copies) {
  return copies && !bf16 && xt.scalar_type() == at::kFloat ? bf16_weights_for(engine, bank) : nullptr;
}

at::Tensor project_rows(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                        const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16, bool copies) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  const Bf16Bits* w16 = weight_copy(engine, bank, xt, bf16, copies);
  if (projects_every_token(engine, bank, N, B) && !w16) {
    const at::Tensor all = at::mm(xt.reshape({N * B, C}), bank.permute({1, 0, 2}).reshape({C, E * D}));
    return all.view({N * B * E, D}).index_select(0, all_token_index(rows, offset, B)).view({-1, B, D});
  }
  return project_sorted(engine, xt, rows, bank, offset, bf16, w16);
}

std::pair<at::Tensor, at::Tensor> project_rows_backward(const EngineOptions& engine, const at::Tensor& xt,
                                                        const at::Tensor& rows, const at::Tensor& bank,
                                                        const std::vector<int64_t>& offset,
                                                        const at::Tensor& ds, bool bf16) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  if (projects_every_token(engine, bank, N, B)) {
    const at::Tensor dall = at::zeros({N * B * E, D}, ds.options())
                                .index_add_(0, all_token_index(rows, offset, B), ds.reshape({-1, D}))
                                .view({N * B, E * D});
    const at::Tensor x2 = xt.reshape({N * B, C});
    const at::Tensor dbank = at::mm(x2.t(), dall).view({C, E, D}).permute({1, 0, 2}).contiguous();
    const at::Tensor dxt = at::mm(dall, bank.permute({1, 0, 2}).reshape({C, E * D}).t()).view({N, B, C});
    return {dxt, dbank};
  }
  return project_sorted_backward(engine, xt, rows, bank, offset, ds, bf16);
}

}  // namespace translution
