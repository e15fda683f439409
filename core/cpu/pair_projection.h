#pragma once
// The engine's relative projections on CPU memory, for nn/relative_projection.h:
// for each matrix W[e] of an [E, C, D] bank, the input rows of the pairs that use
// it are gathered into a scratch block the size of one GEMM's operand
// (cache-resident) and multiplied by W[e] read in place, the matrices shared over
// the cores (cpu/pair_matrices.h). Also the choice between that and projecting
// every token by every matrix.
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cpu/avx512_gemm.h"
#include "util/engine_options.h"

namespace translution {

// On a GPU, Auto projects every token while the [N, B, E, D] intermediate is at most this,
// and takes the offset-batched products beyond (pair_projection.cpp says why;
// nn/memory_estimate counts both).
constexpr int64_t kAllTokenBytesOnGpu = int64_t(64) << 20;

// The algorithm a projection by `bank` ([E, C, D]) of `tokens` tokens at `batch` runs:
// engine.projection where it names one. Auto, on the CPU: per matrix where the products
// go straight to the BLAS, else by the bank's shape; on a GPU: auto_projection_on_gpu.
// Never Auto.
ProjectionAlgorithm projection_for(const EngineOptions& engine, const at::Tensor& bank, int64_t tokens,
                                   int64_t batch);
// Auto's choice on a GPU, given the bytes of the all-token intermediate [N, B, E, D].
ProjectionAlgorithm auto_projection_on_gpu(double all_token_bytes);

// S[rows of e] = X[rows of e] W[e] for every matrix e: xt [N, B, C] (token-major),
// rows [R] the token of each sorted row, offset the entry offsets -> [R, B, D].
// bf16: bfloat16 products (cpu/bf16_gemm.h); w16: the bank's bfloat16 copy to read
// instead of it (cpu/bf16_weights.h), or null. Undefined where the kernels do not
// apply (another device, a dtype or layout the BLAS cannot read, the reference).
at::Tensor sorted_projection(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                             const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16,
                             const Bf16Bits* w16);

// Given dS [R, B, D] for the sorted rows: {dX [N, B, C], dW [E, C, D]}, or two
// undefined tensors where the kernels do not apply.
std::pair<at::Tensor, at::Tensor> sorted_projection_backward(const EngineOptions& engine,
                                                             const at::Tensor& xt, const at::Tensor& rows,
                                                             const at::Tensor& bank,
                                                             const std::vector<int64_t>& offset,
                                                             const at::Tensor& ds, bool bf16);

}  // namespace translution
