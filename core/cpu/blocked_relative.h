#pragma once
// The relative logits and values done block by block on the CPU (cpu/pair_blocks.h),
// each an autograd function of its own: the same results and gradients as the plain
// passes of nn/relative_logits.h and nn/relative_values.h, which hand their work here
// where blocked_relative_applies says the blocks run.
//
// Inputs are token-major ([N, B, C], as the plain passes take them) and their
// gradients come back token-major; pairs are sorted by matrix (nn/pair_order.h).
#include <initializer_list>
#include <vector>

#include <ATen/core/Tensor.h>

#include "util/engine_options.h"

namespace translution {

// The visible pairs sorted by matrix: nn/pair_order.h's PairOrder, as this layer sees it.
struct SortedPairs {
  const std::vector<int64_t>* offset = nullptr;  // E + 1 prefix sums of rows per matrix
  at::Tensor pair_of_row;                        // int64 [R]: i N + j
  at::Tensor query_of_row;                       // int64 [R]: i
  at::Tensor source_of_row;                      // int64 [R]: j
  int64_t queries = 0;                           // M
};

// Whether the blocks run for these inputs and banks (an empty bank: a plain side):
// CPU, one floating type, contiguous, the engine's own products (not the reference
// options nor the all-token or offset-batched projections).
bool blocked_relative_applies(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors,
                              const at::Tensor& pair_of_row);

// Per-head logits [B, H, M, N] of q_ij . k_ji (0 at hidden pairs). q_xt, k_xt: [N, B, C]
// (a plain side: its vectors [N, B, D] and an empty bank); banks [E, C, D]. bf16:
// products in bfloat16 where the bank takes them; copies: a forward without gradients,
// which reads the banks' bfloat16 copies (cpu/bf16_weights.h).
at::Tensor blocked_relative_logits(const EngineOptions& engine, const SortedPairs& pairs,
                                   const at::Tensor& q_xt, const at::Tensor& q_bank, const at::Tensor& k_xt,
                                   const at::Tensor& k_bank, int64_t heads, bool bf16, bool copies);

// sum_j alpha[b, h, i, j] v_ij with v_ij = x_j W[entry(i, j)] (alpha [B, H, M, N], xt
// [N, B, C], bank [E, C, D]): [B, M, D] (head_sliced) or [B, M, H, D].
at::Tensor blocked_relative_values(const EngineOptions& engine, const SortedPairs& pairs,
                                   const at::Tensor& alpha, const at::Tensor& xt, const at::Tensor& bank,
                                   bool head_sliced, bool bf16, bool copies);

}  // namespace translution
