#pragma once
// The shared arithmetic of attention over plain (position-free) queries, keys and
// values, [B, N, D]. Pair-dependent ones go through nn/relative_logits and nn/relative_values. The queries
// may be fewer than the keys (the first M tokens': nn/attention.h's forward_queries).
#include <ATen/core/Tensor.h>

#include "util/engine_options.h"

namespace translution {

// Per-head dot products q_i . k_j: q [B, M, D], k [B, N, D] -> [B, H, M, N], not yet scaled.
at::Tensor attention_logits(const EngineOptions& engine, const at::Tensor& q, const at::Tensor& k,
                            int64_t heads);

// Softmax over sources of logits / divisor; `valid` ([M, N] bool, may be
// undefined) hides pairs. On CPU, one pass per row (cpu/head_attention.h).
at::Tensor attention_softmax(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                             double divisor = 1.0);

// sum_j alpha[b, h, i, j] v[b, j, h-slice]: alpha [B, H, M, N], v [B, N, D] -> [B, M, D].
at::Tensor attend_values(const EngineOptions& engine, const at::Tensor& alpha, const at::Tensor& v,
                         int64_t heads);

// A few queries' attention with the keys and values left unprojected (nn/self_attention.h's
// reassociation), per head h of a projection's weight w [H dh, C] (a Linear's, no bias):
// q [..., H, dh] -> q_h w_h, [..., H, C], which dotted with an input x_j is q_h . (x_j w_h^T);
at::Tensor heads_through_weight(const at::Tensor& q, const at::Tensor& w);
// u [..., H, C] (each head's weighted sum of inputs) -> u_h w_h^T, [..., H, dh].
at::Tensor heads_from_weight(const at::Tensor& u, const at::Tensor& w);

// The three above for self-attention: q, k and v are the thirds of qkv [B, N, 3D],
// the logits scaled by 1 / sqrt(D / heads); `*probs`, when asked, gets alpha.
// On CPU the engine computes it in one piece (cpu/head_attention.h).
at::Tensor self_attention_core(const EngineOptions& engine, const at::Tensor& qkv, int64_t heads,
                               const at::Tensor& valid, at::Tensor* probs);

}  // namespace translution
