#pragma once
// The engine's attention products on CPU memory, for nn/attention_math: each
// head's q, k, v and alpha are read in place inside [B, N, H dh] (or [B, H, M, N])
// tensors and multiplied by the BLAS, one small GEMM per (image, head), where
// LibTorch's bmm would select, copy and dispatch per matrix. Each function returns
// an undefined tensor where its kernels do not apply (another device or dtype, a
// layout the BLAS cannot read, the reference options); the caller then
// computes the same value with ATen's ops.
#include <ATen/core/Tensor.h>

#include "util/engine_options.h"

namespace translution {

// q [B, M, D], k [B, N, D] -> [B, H, M, N], per-head q_i . k_j, not yet scaled.
at::Tensor head_logits(const EngineOptions& engine, const at::Tensor& q, const at::Tensor& k, int64_t heads);

// alpha [B, H, M, N], v [B, N, D] -> [B, M, D], per-head sum_j alpha_ij v_j.
at::Tensor head_values(const EngineOptions& engine, const at::Tensor& alpha, const at::Tensor& v,
                       int64_t heads);

// softmax over the last axis of logits / divisor, hidden pairs (`valid` [M, N]
// false; undefined: none) given zero: one pass per row (with gradients, an
// autograd function split over the cores, cpu/training_passes.h).
at::Tensor head_softmax(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                        double divisor);

// LoR's up-projection per head: s [B, N, H, c], up [c, H dh] -> [B, N, H dh], head h
// s[..., h, :] up[:, h's columns]. Without gradients only (one BLAS call per head,
// reading s and up in place, where an einsum would permute, copy and batch them).
at::Tensor head_up_projection(const EngineOptions& engine, const at::Tensor& s, const at::Tensor& up,
                              int64_t heads, int64_t head_dim);

// Self-attention of qkv [B, N, 3D] (q, k, v its thirds) -> [B, N, D], logits
// scaled by 1 / sqrt(D / heads); `*probs`, when asked, gets alpha. Without
// gradients (cpu/inference_passes.h): one pass per head and block of rows, split
// over the cores, alpha written only where asked for. With them
// (cpu/training_passes.h): one autograd function whose backward runs per (image,
// head) and writes the gradient of qkv in one piece.
at::Tensor fused_self_attention(const EngineOptions& engine, const at::Tensor& qkv, int64_t heads,
                                const at::Tensor& valid, at::Tensor* probs);

}  // namespace translution
