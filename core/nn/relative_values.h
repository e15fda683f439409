#pragma once
// The relative values f'_i = sum_j alpha_ij v_ij with v_ij = x_j W[entry(i, j)],
// as one autograd function on the pair-sorted rows (nn/pair_order.h); backward
// computes the weight gradients matrix by matrix.
#include <ATen/core/Tensor.h>

#include "nn/pair_order.h"
#include "util/engine_options.h"

namespace translution {

// sum_j alpha[b, h, i, j] v_ij with v_ij = x_j W[entry(i, j)] (alpha [B, H, M, N],
// x: [B, N, C], bank [E, C, D]), for the order's M queries.
// head_sliced: head h weighs its own slice of v (Translution) -> [B, M, D];
// otherwise every head weighs all of v (LoR's low-rank values) -> [B, M, H, D].
at::Tensor relative_values(const EngineOptions& engine, const PairOrder& order, const at::Tensor& alpha,
                           const at::Tensor& input, const at::Tensor& bank, bool head_sliced);

}  // namespace translution
