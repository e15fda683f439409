#pragma once
// The fast Translution arithmetic, exact and without per-pair weights, starts here.
//
// Every visible pair (i, j) uses matrix entry(i, j) of each relative bank (the key
// bank is stored mirrored, see token_layout.h), so pairs are sorted once by entry
// and q, k and v share that order. For each matrix W[e] (C x C', read in place
// from the [E, C, C'] bank) one GEMM (nn/relative_projection.h) projects the rows of all pairs that use it,
// across the batch: M = B n_e, exactly N^2 C C' multiply-adds per projection.
// Two custom autograd functions do the rest on the pair-sorted rows:
//   relative_logits  a_ij = q_ij . k_ji per head (either side may be plain),
//   relative_values  f'_i = sum_j alpha_ij v_ij,
// so no [N, N, C'] tensor is laid out by (i, j), nothing is broadcast over the
// batch, and backward computes weight gradients matrix by matrix.
// docs/performance.md compares this with the alternatives the design notes list.
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/token_layout.h"
#include "util/built_once.h"

namespace translution {

// The visible pairs (i, j) of the first `queries` tokens i (all N, or fewer where
// only their outputs are needed: nn/attention.h's forward_queries) with every j.
struct PairOrder {
  int64_t tokens = 0;                 // N: keys, and the grid's row length
  int64_t queries = 0;                // M <= N
  std::vector<int64_t> entry_offset;  // E + 1 prefix sums: rows of entry e are [offset[e], offset[e+1])
  at::Tensor pair_of_row;             // int64 [R]: pair i N + j of each sorted row
  at::Tensor query_of_row;            // int64 [R]: i
  at::Tensor source_of_row;           // int64 [R]: j
  PairOrder to(const c10::Device& device) const;
};

PairOrder make_pair_order(const RelativeTable& table, int64_t queries = -1);  // -1: every token

// A relative table's pair orders, one per number of queries and device: made on the
// host the first time one is asked for (on the CPU every token's and the CLS token's
// alone up front), moved to its device, and kept while the module lives (a forward on
// a GPU copies nothing from the host).
class PairOrders {
 public:
  explicit PairOrders(const RelativeTable& table);
  const PairOrder& get(const RelativeTable& table, int64_t queries, const c10::Device& device);

 private:
  BuiltOnce<std::pair<int64_t, c10::Device>, PairOrder> orders_;  // (queries, device)
};

}  // namespace translution
