#pragma once
// Fused CUDA kernels for Translution's relative logits and relative values,
// forward and backward, over plain device pointers: one thread per element of
// each output or gradient, the arithmetic of relative_pairs.h. Built by nvcc
// (scripts/cuda_compile_check.sh); nothing in the engine calls them yet: a wrapper
// over LibTorch's tensors belongs where CUDA LibTorch is found.
#include <cstdint>

#include "cuda/relative_pairs.h"

struct CUstream_st;

namespace translution::cuda_kernels {

// logits [B, H, M, N] from xq, xk [B, N, C], banks wq, wk [E, C, D] and entry_of [M, N].
void launch_relative_logits(const RelativeShape& shape, const float* xq, const float* wq, const float* xk,
                            const float* wk, const int64_t* entry_of, float* logits, CUstream_st* stream);

// out [B, M, D] from attention [B, H, M, N], xv [B, N, C] and the bank wv [E, C, D].
void launch_relative_values(const RelativeShape& shape, const float* alpha, const float* xv, const float* wv,
                            const int64_t* entry_of, float* out, CUstream_st* stream);

// Their gradients given dlogits [B, H, M, N]: dxq, dxk [B, N, C] (rows i >= M of dxq
// are 0) and the banks' dwq, dwk [E, C, D].
void launch_relative_logits_backward(const RelativeShape& shape, int64_t entries, const float* dlogits,
                                     const float* xq, const float* wq, const float* xk, const float* wk,
                                     const int64_t* entry_of, float* dxq, float* dwq, float* dxk, float* dwk,
                                     CUstream_st* stream);

// Given dout [B, M, D]: dalpha [B, H, M, N], dxv [B, N, C] and dwv [E, C, D].
void launch_relative_values_backward(const RelativeShape& shape, int64_t entries, const float* dout,
                                     const float* alpha, const float* xv, const float* wv,
                                     const int64_t* entry_of, float* dalpha, float* dxv, float* dwv,
                                     CUstream_st* stream);

}  // namespace translution::cuda_kernels
