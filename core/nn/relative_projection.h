#pragma once
// The relative projection x_j W[entry(i, j)] of every visible pair, in pair order
// (nn/pair_order.h): for each matrix W[e] (C x C', read in place from the
// [E, C, C'] bank) one product projects the rows of all pairs that use it, across
// the batch: M = B n_e, exactly N^2 C C' multiply-adds per projection. On the CPU
// the products go straight to the engine's kernels (cpu/pair_projection.h);
// elsewhere, and under the reference options, through at::mm. Where the
// matrices are tiny (or on a GPU) every token may instead be projected by every
// matrix in one product and the pairs' rows picked (projects_every_token). The
// third way, ProjectionAlgorithm::OffsetBatched, is shaped for a GPU: the pairs'
// rows in a few buckets of similar pair counts, one batched product per bucket
// (nn/offset_buckets.h), in LibTorch's ops on any device. It computes in the
// input's precision: bfloat16 products (bf16) and bfloat16 weight copies keep to
// the per-matrix path.
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cpu/avx512_gemm.h"
#include "cpu/pair_projection.h"
#include "util/engine_options.h"

namespace translution {

// x_row(r) W[entry(r)] for every sorted row r: [R, B, D]. xt: [N, B, C] (token-major
// input), rows: [R] the token of each row, offset: the order's entry offsets.
// bf16: bfloat16 products (cpu/bf16_gemm.h). copies: a forward without gradients,
// which reads the bank's bfloat16 copy where one is in force (cpu/bf16_weights.h),
// per matrix whatever the algorithm; never a backward's recomputation.
at::Tensor project_rows(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                        const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16, bool copies);

// Gradients of project_rows given ds [R, B, D]: into the input ([N, B, C]) and the bank.
std::pair<at::Tensor, at::Tensor> project_rows_backward(const EngineOptions& engine, const at::Tensor& xt,
                                                        const at::Tensor& rows, const at::Tensor& bank,
                                                        const std::vector<int64_t>& offset,
                                                        const at::Tensor& ds, bool bf16);

// [N, B, ...] gradient from per-row contributions [R, B, ...].
at::Tensor scatter_rows(const at::Tensor& rows_grad, const at::Tensor& index, int64_t tokens);

// The bank's bfloat16 copy that a forward without gradients (copies) reads instead
// of it where one is in force (cpu/bf16_weights.h), or null.
const Bf16Bits* weight_copy(const EngineOptions& engine, const at::Tensor& bank, const at::Tensor& xt,
                            bool bf16, bool copies);

}  // namespace translution
