#pragma once
// The engine's ways to compute a relative projection (nn/relative_projection.h) other
// than its plain one, one product per matrix through at::mm. For sorted rows r (a pair
// order's, grouped by bank entry) S[r] = X[row r] W[entry r]:
//   * offset-batched (ProjectionAlgorithm::OffsetBatched), shaped for a GPU: the rows in a
//     few buckets of similar pair counts (cpu/offset_buckets.h), one batched product per
//     bucket, in LibTorch's ops on any device;
//   * all-token: every token by every matrix in one product, and the pairs' rows picked,
//     where the matrices are tiny or the batch small on a GPU;
//   * the per-matrix kernels on CPU memory (sorted_projection, cpu/pair_projection.h),
//     in bfloat16 too, and reading a bank's bfloat16 copy.
// cpu/pair_projection.h's projection_for chooses among them.
// Each call returns undefined tensors where none applies; the caller's plain path runs then.
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cpu/avx512_gemm.h"
#include "util/engine_options.h"

namespace translution {

// S for every sorted row: [R, B, D]. xt: [N, B, C] (token-major input), rows: [R] the token of
// each row, offset: the order's entry offsets (E + 1). bf16: bfloat16 products; w16: the
// bank's bfloat16 copy to read instead of it, or null.
at::Tensor engine_projection(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                             const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16,
                             const Bf16Bits* w16);

// Its gradients given dS [R, B, D]: into the input ([N, B, C]) and the bank.
std::pair<at::Tensor, at::Tensor> engine_projection_backward(const EngineOptions& engine,
                                                             const at::Tensor& xt, const at::Tensor& rows,
                                                             const at::Tensor& bank,
                                                             const std::vector<int64_t>& offset,
                                                             const at::Tensor& ds, bool bf16);

}  // namespace translution
