#pragma once
// The fused CUDA kernels of core/cuda (relative logits and values, forward and
// backward, W_delta read in place, no B x N x N x C' tensor) over LibTorch's
// tensors: shapes checked, float32 CUDA tensors made contiguous, the launch on
// LibTorch's current stream. Built only where a CUDA LibTorch and nvcc are both
// found (fused_relative_kernels_built()); elsewhere every call throws an Error
// saying so. Nothing in the engine's operators calls them yet: they are proven on
// a GPU against the per-pair formulas (tests/core/relative_pairs_test.cpp) before
// any path takes them.
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

bool fused_relative_kernels_built();

// The pairs a layer's kernels read: entry_of [M, N] int64 on the device, the bank
// entry of pair (i, j) or -1 where it is hidden (nn/token_layout.h's table).
struct FusedPairs {
  at::Tensor entry_of;
  int64_t entries = 0;  // E, the banks' first dimension
  int64_t heads = 0;
};

// logits [B, H, M, N] from xq, xk [B, N, C] and banks wq, wk [E, C, D].
at::Tensor fused_relative_logits(const FusedPairs& p, const at::Tensor& xq, const at::Tensor& wq,
                                 const at::Tensor& xk, const at::Tensor& wk);
// out [B, M, D] from alpha [B, H, M, N], xv [B, N, C] and the bank wv [E, C, D].
at::Tensor fused_relative_values(const FusedPairs& p, const at::Tensor& alpha, const at::Tensor& xv,
                                 const at::Tensor& wv);
// Given dlogits: {dxq, dwq, dxk, dwk}.
std::vector<at::Tensor> fused_relative_logits_backward(const FusedPairs& p, const at::Tensor& dlogits,
                                                       const at::Tensor& xq, const at::Tensor& wq,
                                                       const at::Tensor& xk, const at::Tensor& wk);
// Given dout: {dalpha, dxv, dwv}.
std::vector<at::Tensor> fused_relative_values_backward(const FusedPairs& p, const at::Tensor& dout,
                                                       const at::Tensor& alpha, const at::Tensor& xv,
                                                       const at::Tensor& wv);

}  // namespace translution
