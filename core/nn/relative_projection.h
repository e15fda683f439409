#pragma once
// The relative projection x_j W[entry(i, j)] of every visible pair, in pair order
// (nn/pair_order.h): for each matrix W[e] (C x C', read in place from the [E, C, C']
// bank) one product projects the rows of all pairs that use it, across the batch:
// M = B n_e, exactly N^2 C C' multiply-adds per projection. This is the plain path
// and the reference; the engine's other ways to the same products (offset-batched,
// all-token, the CPU kernels, bfloat16) are behind one call (cpu/projection_algorithms.h).
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

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

}  // namespace translution
