#include "nn/relative_projection.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/graph_task.h>

#include "cpu/bf16_gemm.h"
#include "cpu/bf16_weights.h"
#include "cpu/gather_rows.h"
#include "cpu/pair_matrices.h"
#include "cpu/blas_gemm.h"
#include "cpu/avx512_gemm.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "cpu/helper_threads.h"

namespace translution {
namespace {

// Whether the per-matrix loops below can hand raw memory to BLAS (blas_gemm.h).
bool raw_path(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors)
    if (!blas_gemm_usable(*t) || t->scalar_type() != (*tensors.begin())->scalar_type()) return false;
  return true;
}

// S[rows of e] = X[rows of e] W[e] for every matrix: one GEMM each, M = B n_e. On
// the raw path each matrix's input rows are gathered into a scratch block the size
// of one GEMM's operand (cache-resident) instead of a gathered copy of all rows.
// w16: the bank's bfloat16 copy to read instead of it (project_rows finds it), or null.
at::Tensor project_sorted(const at::Tensor& xt_in, const at::Tensor& rows, const at::Tensor& bank,
                          const std::vector<int64_t>& offset, bool bf16, const Bf16Bits* w16) {
  const at::Tensor xt = xt_in.contiguous();
  const int64_t R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  at::Tensor out = at::empty({R, B, D}, xt.options());
  at::Tensor out2 = out.view({R * B, D});
  if ((bf16 || w16 || raw_path({&xt, &bank, &out2})) && rows.is_cpu()) {  // bf16, w16: float CPU memory
    const int64_t block = most_rows(offset) * B;
    const int parts = bf16 ? bf16_gemm_parts() : matrix_parts(block, C, D);
    at::Tensor scratch = at::empty({parts, block, C}, xt.options());
    AT_DISPATCH_FLOATING_TYPES(xt.scalar_type(), "project_sorted", [&] {
      const scalar_t *xp = xt.data_ptr<scalar_t>(), *wp = bank.data_ptr<scalar_t>();
      scalar_t* op = out2.data_ptr<scalar_t>();
      const int64_t* rp = rows.data_ptr<int64_t>();
      // Matrices claimed four at a time as each core comes free (deterministic: each product is the
      // same whichever core computes it). The backward keeps fixed parts for its per-part sums.
      const size_t E = offset.size() - 1;
      for_each_claimed(E, parts, 4, [&](size_t e, size_t next, int part) {
        const int64_t n = offset[e + 1] - offset[e];
        if (n == 0) return;
        scalar_t* gp = scratch.data_ptr<scalar_t>() + part * block * C;
        gather_block(xp, rp, offset[e], offset[e + 1], B * C, gp);
        matrix_product<scalar_t>(n * B, C, D, gp, wp + int64_t(e) * C * D, op + offset[e] * B * D,
                                 next < E ? wp + int64_t(next) * C * D : nullptr, bf16,
                                 w16 ? w16 + int64_t(e) * C * D : nullptr,
                                 w16 && next < E ? w16 + int64_t(next) * C * D : nullptr);
      });
    });
    return out;
  }
  const at::Tensor g2 = gather_rows(xt, rows).view({R * B, C});
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    const int64_t n = offset[e + 1] - offset[e];
    if (n == 0) continue;
    at::Tensor chunk = out2.narrow(0, offset[e] * B, n * B);
    at::mm_out(chunk, g2.narrow(0, offset[e] * B, n * B), bank.select(0, int64_t(e)));
  }
  return out;
}

// Given dS for sorted rows: the gradients of the bank and of X ([N, B, C]), per
// matrix. The raw path gathers and scatters one matrix's rows at a time, as above.
std::pair<at::Tensor, at::Tensor> project_sorted_backward(const at::Tensor& xt_in, const at::Tensor& rows,
                                                          const at::Tensor& bank, const std::vector<int64_t>& offset,
                                                          const at::Tensor& ds_in, bool bf16) {
  const at::Tensor xt = xt_in.contiguous();
  const int64_t N = xt.size(0), R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  const at::Tensor ds2 = ds_in.reshape({R * B, D}).contiguous();
  // Every matrix with pairs is overwritten below; only the unused ones need zeros.
  at::Tensor dbank = bank_gradient_buffer(bank, offset);
  if ((bf16 || raw_path({&xt, &bank, &ds2, &dbank})) && rows.is_cpu()) {
    const int64_t block = most_rows(offset) * B;
    const int parts = bf16 ? bf16_gemm_parts() : matrix_parts(block, C, D);
    // Each part adds into its own input gradient; they are summed at the end.
    at::Tensor dxt = at::zeros({parts, N, B, C}, xt.options());
    at::Tensor scratch = at::empty({parts, 2, block, C}, xt.options());
    AT_DISPATCH_FLOATING_TYPES(xt.scalar_type(), "project_sorted_backward", [&] {
      const scalar_t *xp = xt.data_ptr<scalar_t>(), *wp = bank.data_ptr<scalar_t>(), *sp = ds2.data_ptr<scalar_t>();
      scalar_t* dwp = dbank.data_ptr<scalar_t>();
      const int64_t* rp = rows.data_ptr<int64_t>();
      const int64_t row_size = B * C;
      for_matrix_parts(offset, parts, [&](size_t first, size_t last, int part) {
        scalar_t* dxp = dxt.data_ptr<scalar_t>() + part * N * row_size;
        scalar_t *gp = scratch.data_ptr<scalar_t>() + part * 2 * block * C, *dgp = gp + block * C;
        for (size_t e = first; e < last; ++e) {
          const int64_t n = offset[e + 1] - offset[e], w = int64_t(e) * C * D;
          if (n == 0) continue;
          const scalar_t* ds_e = sp + offset[e] * B * D;
          gather_block(xp, rp, offset[e], offset[e + 1], row_size, gp);
          matrix_gradients<scalar_t>(n * B, C, D, gp, ds_e, wp + w, dwp + w, dgp, bf16);
          scatter_add_block(dgp, rp, offset[e], offset[e + 1], row_size, dxp);
        }
      });
    });
    return {parts == 1 ? dxt[0] : dxt.sum(0), dbank};
  }
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

// Algorithm choice. Per matrix GEMMs do the exact work but pay a call per matrix
// (E of them, 172 for a 7x7 grid). Through at::mm each call also pays for views
// and dispatch, so for tiny matrices (LoR's 24 x 24) at small batch every token
// is projected by every matrix in one GEMM and the needed rows are picked: about
// E/N = 3.4x the arithmetic, a few ops instead of hundreds. Straight to the BLAS
// (CPU, the default) per-matrix wins at every shape measured, batch 1 included,
// so there it always runs. On a GPU each per-matrix product is a kernel launch of
// a few microseconds' work, so a step costs about the same at any batch, while the
// all-token product grows with the batch: it wins for one image and small batches
// and loses at large ones (both: docs/performance.md, "Relative projections: per
// matrix, or every token"). The all-token product runs there while its
// [N, B, E, D] intermediate is at most kAllTokenBytesOnGpu (Translution ViT-A/12: up
// to batch 162; LoR's at any batch measured).
constexpr int64_t kAllTokenBytesOnGpu = int64_t(1) << 30;

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
    for (size_t e = 0; e + 1 < offset.size(); ++e) entry.insert(entry.end(), size_t(offset[e + 1] - offset[e]), int64_t(e));
    entries = at::tensor(entry, at::kLong).to(device);
  }
  return entries;
}

// Position of (row r, batch b) in the all-token projection [N, B, E, D] viewed as rows of D.
at::Tensor all_token_index(const at::Tensor& rows, const std::vector<int64_t>& offset, int64_t B) {
  const int64_t E = int64_t(offset.size()) - 1;
  const at::Tensor& entry_of_row = entry_of_rows(offset, rows.device());
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

const Bf16Bits* weight_copy(const at::Tensor& bank, const at::Tensor& xt, bool bf16, bool copies) {
  return copies && !bf16 && xt.scalar_type() == at::kFloat ? bf16_weights_for(bank) : nullptr;
}

at::Tensor project_rows(const at::Tensor& xt, const at::Tensor& rows, const at::Tensor& bank,
                        const std::vector<int64_t>& offset, bool bf16, bool copies) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  const Bf16Bits* w16 = weight_copy(bank, xt, bf16, copies);
  if (projects_every_token(bank, N, B) && !w16) {
    const at::Tensor all = at::mm(xt.reshape({N * B, C}), bank.permute({1, 0, 2}).reshape({C, E * D}));
    return all.view({N * B * E, D}).index_select(0, all_token_index(rows, offset, B)).view({-1, B, D});
  }
  return project_sorted(xt, rows, bank, offset, bf16, w16);
}

std::pair<at::Tensor, at::Tensor> project_rows_backward(const at::Tensor& xt, const at::Tensor& rows,
                                                        const at::Tensor& bank, const std::vector<int64_t>& offset,
                                                        const at::Tensor& ds, bool bf16) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  if (projects_every_token(bank, N, B)) {
    const at::Tensor dall = at::zeros({N * B * E, D}, ds.options())
                                .index_add_(0, all_token_index(rows, offset, B), ds.reshape({-1, D}))
                                .view({N * B, E * D});
    const at::Tensor x2 = xt.reshape({N * B, C});
    const at::Tensor dbank = at::mm(x2.t(), dall).view({C, E, D}).permute({1, 0, 2}).contiguous();
    const at::Tensor dxt = at::mm(dall, bank.permute({1, 0, 2}).reshape({C, E * D}).t()).view({N, B, C});
    return {dxt, dbank};
  }
  return project_sorted_backward(xt, rows, bank, offset, ds, bf16);
}

// The choice explained above kAllTokenBytesOnGpu.
bool projects_every_token(const at::Tensor& bank, int64_t tokens, int64_t batch) {
  switch (engine_options().projection) {
    case ProjectionAlgorithm::PerMatrix: return false;
    case ProjectionAlgorithm::AllTokens: return true;
    case ProjectionAlgorithm::Auto: break;
  }
  if (bank.is_cuda())
    return tokens * batch * bank.size(0) * bank.size(2) * int64_t(bank.element_size()) <= kAllTokenBytesOnGpu;
  if (blas_gemm_usable(bank)) return false;
  return bank.size(1) * bank.size(2) <= 64 * 64 && batch <= 8;
}

}  // namespace translution
