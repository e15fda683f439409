#pragma once
// The fast Translution arithmetic, exact and without per-pair weights.
//
// Every visible pair (i, j) uses matrix entry(i, j) of each relative bank (the key
// bank is stored mirrored, see token_layout.h), so pairs are sorted once by entry
// and q, k and v share that order. For each matrix W[e] (C x C', read in place
// from the [E, C, C'] bank) one GEMM projects the rows of all pairs that use it,
// across the batch: M = B n_e, exactly N^2 C C' multiply-adds per projection.
// Two custom autograd functions do the rest on the pair-sorted rows:
//   relative_logits  a_ij = q_ij . k_ji per head (either side may be plain),
//   relative_values  f'_i = sum_j alpha_ij v_ij,
// so no [N, N, C'] tensor is laid out by (i, j), nothing is broadcast over the
// batch, and backward computes weight gradients matrix by matrix.
// docs/benchmarks.md compares this with the alternatives the design notes list.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/token_layout.h"

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

// A relative table's pair orders, one per number of queries (every token's and the
// CLS token's alone built up front, others on first use), each kept on the device
// it was last asked for (a lock guards the lookup; a module used on two devices at
// once would move its orders back and forth, which no caller does).
class PairOrders {
 public:
  explicit PairOrders(const RelativeTable& table);
  const PairOrder& get(const RelativeTable& table, int64_t queries, const c10::Device& device);

 private:
  std::mutex lock_;
  std::map<int64_t, PairOrder> orders_;
};

// How relative projections are computed. Auto: per matrix where the products go
// straight to the BLAS, every token on a GPU up to a bound, else by bank shape; the
// others force one path (tests prove both exact; `translution bench --algorithm`
// compares).
enum class ProjectionAlgorithm { Auto, PerMatrix, AllTokens };
void set_projection_algorithm(ProjectionAlgorithm algorithm);
ProjectionAlgorithm projection_algorithm();
ProjectionAlgorithm parse_projection_algorithm(const std::string& name);  // auto|per-matrix|all-tokens
// Whether a projection by `bank` ([E, C, D]) of `tokens` tokens at `batch` projects
// every token by every matrix, under the algorithm in force (on a GPU while the
// [N, B, E, D] intermediate is at most 1 GiB; relative_ops.cpp says why).
bool projects_every_token(const at::Tensor& bank, int64_t tokens, int64_t batch);

// Memory for time: when on, backward recomputes the pair-sorted q, k and v rows
// instead of keeping them from forward (one more forward's projection GEMMs;
// 3 x pairs x batch x C' floats less per layer). Off by default.
void set_recompute_pair_rows(bool recompute);
bool recompute_pair_rows();


// Per-head logits [B, H, M, N] for the order's M queries (unscaled; 0 at hidden
// pairs). Each side is either relative (input [B, N, C] and bank [E, C, D]) or
// plain (vectors [B, N, D] and an undefined bank; the query side may pass only
// its first M rows).
at::Tensor relative_logits(const PairOrder& order, const at::Tensor& q_input, const at::Tensor& q_bank,
                           const at::Tensor& k_input, const at::Tensor& k_bank, int64_t heads);

// sum_j alpha[b, h, i, j] v_ij with v_ij = x_j W[entry(i, j)] (alpha [B, H, M, N],
// x: [B, N, C], bank [E, C, D]), for the order's M queries.
// head_sliced: head h weighs its own slice of v (Translution) -> [B, M, D];
// otherwise every head weighs all of v (LoR's low-rank values) -> [B, M, H, D].
at::Tensor relative_values(const PairOrder& order, const at::Tensor& alpha, const at::Tensor& input,
                           const at::Tensor& bank, bool head_sliced);

}  // namespace translution
