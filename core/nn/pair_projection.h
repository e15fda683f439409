#pragma once
// The fast relative projection: out[b, i, j] = f_row(i,j) . W[entry(i, j)] for every
// pair, without ever building per-pair weights.
//
// Entries are grouped into blocks (one per offset row dy, plus the CLS block).
// Each block is one GEMM: the block's row tokens (a contiguous token range) times
// the block's matrices side by side, read in place from the [C, E, D] weight bank.
// A precomputed index then picks each pair's result. For a 2-D grid the GEMMs do
// (2W-1)/W times the exact N^2 C D multiply-adds (about 1.9x for 7x7 patches),
// against the 4x of projecting every token by every offset; docs/benchmarks.md
// has the measurements.
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/token_layout.h"

namespace translution {

struct PairPlan {
  std::vector<EntryBlock> blocks;
  at::Tensor pair_index;  // int64 [N * N]: position of pair (i, j) in the concatenated block outputs
  int64_t tokens = 0;
  int64_t computed_rows = 0;  // sum over blocks of rows * entries (the GEMM work, in row-entries)
};

PairPlan make_pair_plan(const RoleTable& role, int64_t tokens);

// f: [B, N, C]; bank: [C, E, D]; pair_index on f's device. Returns [B, N, N, D].
at::Tensor project_pairs(const at::Tensor& f, const at::Tensor& bank, const PairPlan& plan,
                         const at::Tensor& pair_index);

}  // namespace translution
