#pragma once
// The relative logits a_ij = q_ij . k_ji per head, as one autograd function on the
// pair-sorted rows (nn/pair_order.h): each side relative (projected by the offset
// matrix of its pair, nn/relative_projection.h) or plain; no [N, N, C'] tensor is
// laid out by (i, j) and nothing is broadcast over the batch.
#include <ATen/core/Tensor.h>

#include "nn/pair_order.h"
#include "util/engine_options.h"

namespace translution {

// Per-head logits [B, H, M, N] for the order's M queries (unscaled; 0 at hidden
// pairs). Each side is either relative (input [B, N, C] and bank [E, C, D]) or
// plain (vectors [B, N, D] and an undefined bank; the query side may pass only
// its first M rows).
at::Tensor relative_logits(const EngineOptions& engine, const PairOrder& order, const at::Tensor& q_input,
                           const at::Tensor& q_bank, const at::Tensor& k_input, const at::Tensor& k_bank,
                           int64_t heads);

}  // namespace translution
