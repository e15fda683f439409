#include "cpu/pair_projection.h"

#include <initializer_list>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "cpu/bf16_gemm.h"
#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/pair_matrices.h"
#include "util/engine_options.h"

namespace translution {
namespace {

// Whether the per-matrix loops below can hand raw memory to BLAS (blas_gemm.h).
bool raw_path(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors)
    if (!blas_gemm_usable(*t) || t->scalar_type() != (*tensors.begin())->scalar_type()) return false;
  return true;
}

// Algorithm choice. Per matrix GEMMs do the exact work but pay a call per matrix
// (E of them, 172 for a 7x7 grid). Through at::mm each call also pays for views
// and dispatch, so for tiny matrices (LoR's 24 x 24) at small batch every token
// is projected by every matrix in one GEMM and the needed rows are picked: about
// E/N = 3.4x the arithmetic, a few ops instead of hundreds. Straight to the BLAS
// (CPU, the default) per-matrix wins at every shape measured, batch 1 included,
// so there it always runs. On a GPU a per-matrix product is a kernel launch of a
// few microseconds' work and lost to both others at every shape measured; the
// all-token product's one large GEMM wins while its intermediate is small (one
// image; LoR at batch 32) and its 3.4x arithmetic and the scatter of its gradient
// lose beyond, to a few batched products over exactly the pairs' rows
// (docs/performance.md, "Relative projections on a GPU").

}  // namespace

ProjectionAlgorithm auto_projection_on_gpu(double all_token_bytes) {
  return all_token_bytes <= double(kAllTokenBytesOnGpu) ? ProjectionAlgorithm::AllTokens
                                                        : ProjectionAlgorithm::OffsetBatched;
}

ProjectionAlgorithm projection_for(const EngineOptions& engine, const at::Tensor& bank, int64_t tokens,
                                   int64_t batch) {
  if (engine.projection != ProjectionAlgorithm::Auto) return engine.projection;
  if (bank.is_cuda())
    return auto_projection_on_gpu(double(tokens) * double(batch) * double(bank.size(0)) *
                                  double(bank.size(2)) * double(bank.element_size()));
  if (!engine.reference && blas_gemm_usable(bank)) return ProjectionAlgorithm::PerMatrix;
  return bank.size(1) * bank.size(2) <= 64 * 64 && batch <= 8 ? ProjectionAlgorithm::AllTokens
                                                              : ProjectionAlgorithm::PerMatrix;
}

at::Tensor sorted_projection(const EngineOptions& engine, const at::Tensor& xt_in, const at::Tensor& rows,
                             const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16,
                             const Bf16Bits* w16) {
  const at::Tensor xt = xt_in.contiguous();
  // bf16 and w16 stand for float CPU memory.
  if (!(bf16 || w16 || (!engine.reference && raw_path({&xt, &bank}))) || !rows.is_cpu()) return {};
  const int64_t R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  at::Tensor out = at::empty({R, B, D}, xt.options());
  at::Tensor out2 = out.view({R * B, D});
  const int64_t block = most_rows(offset) * B;
  const Bf16Run run = bf16_run(engine);
  const int parts = bf16 ? run.parts : matrix_parts(engine, block, C, D);
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
                               next < E ? wp + int64_t(next) * C * D : nullptr, bf16 ? &run : nullptr,
                               w16 ? w16 + int64_t(e) * C * D : nullptr,
                               w16 && next < E ? w16 + int64_t(next) * C * D : nullptr);
    });
  });
  return out;
}

std::pair<at::Tensor, at::Tensor> sorted_projection_backward(const EngineOptions& engine,
                                                             const at::Tensor& xt_in, const at::Tensor& rows,
                                                             const at::Tensor& bank,
                                                             const std::vector<int64_t>& offset,
                                                             const at::Tensor& ds_in, bool bf16) {
  const at::Tensor xt = xt_in.contiguous();
  const int64_t N = xt.size(0), R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  const at::Tensor ds2 = ds_in.reshape({R * B, D}).contiguous();
  if (!(bf16 || (!engine.reference && raw_path({&xt, &bank, &ds2}))) || !rows.is_cpu()) return {};
  // Every matrix with pairs is overwritten below; only the unused ones need zeros.
  at::Tensor dbank = bank_gradient_buffer(bank, offset);
  const int64_t block = most_rows(offset) * B;
  const Bf16Run run = bf16_run(engine);
  const int parts = bf16 ? run.parts : matrix_parts(engine, block, C, D);
  // Each part adds into its own input gradient; they are summed at the end.
  at::Tensor dxt = at::zeros({parts, N, B, C}, xt.options());
  at::Tensor scratch = at::empty({parts, 2, block, C}, xt.options());
  AT_DISPATCH_FLOATING_TYPES(xt.scalar_type(), "project_sorted_backward", [&] {
    const scalar_t *xp = xt.data_ptr<scalar_t>(), *wp = bank.data_ptr<scalar_t>(),
                   *sp = ds2.data_ptr<scalar_t>();
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
        matrix_gradients<scalar_t>(n * B, C, D, gp, ds_e, wp + w, dwp + w, dgp, bf16 ? &run : nullptr);
        scatter_add_block(dgp, rp, offset[e], offset[e + 1], row_size, dxp);
      }
    });
  });
  return {parts == 1 ? dxt[0] : dxt.sum(0), dbank};
}

}  // namespace translution
