#pragma once
// The fast relative projection: out[i, j] = f_row(i,j) . W[entry(i, j)] for every
// pair, without building per-pair weights and with exactly N^2 C C' multiply-adds.
//
// Pairs are sorted by the matrix they use. For each matrix W[e] (C x C', read in
// place from the [E, C, C'] bank) one GEMM multiplies the rows of all pairs that
// use it, across the batch: M = B n_e. A custom autograd function computes the
// gradients the same way, so backward neither saves per-pair tensors nor builds
// a full-size weight gradient per matrix. docs/benchmarks.md compares this with
// projecting every token by every matrix and with banded GEMMs.
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/token_layout.h"

namespace translution {

struct PairPlan {
  int64_t tokens = 0, entries = 0;
  std::vector<int64_t> entry_offset;  // E + 1 prefix sums: computed rows of entry e are [offset[e], offset[e+1])
  at::Tensor rows;                    // int64 [R]: the token each computed row projects, sorted by entry
  at::Tensor pair_of_row;             // int64 [R]: the pair (i N + j) each computed row belongs to
  at::Tensor pair_index;              // int64 [N N]: computed row of each pair; R (a zero row) for hidden pairs
};

PairPlan make_pair_plan(const RoleTable& role, const at::Tensor& valid, int64_t entries);

// Index tensors of a plan on one device (moved once, then reused).
struct PairPlanTensors {
  at::Tensor rows, pair_of_row, pair_index;
};
PairPlanTensors plan_tensors_on(const PairPlan& plan, const c10::Device& device);

// f: [B, N, C]; bank: [E, C, D]. Returns pairs token-major: [N (i), N (j), B, D].
at::Tensor project_pairs(const at::Tensor& f, const at::Tensor& bank, const PairPlan& plan,
                         const PairPlanTensors& tensors);

}  // namespace translution
