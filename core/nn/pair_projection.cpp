#include "nn/pair_projection.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

PairPlan make_pair_plan(const RoleTable& role, int64_t tokens) {
  PairPlan plan;
  plan.blocks = role.blocks;
  plan.tokens = tokens;
  std::vector<int64_t> block_offset;
  for (const auto& b : plan.blocks) {
    block_offset.push_back(plan.computed_rows);
    plan.computed_rows += b.rows * b.entries;
  }
  const int64_t N = tokens;
  at::Tensor index = at::empty({N * N}, at::kLong);
  auto idx = index.accessor<int64_t, 1>();
  auto entry = role.entry.accessor<int64_t, 2>();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const int64_t e = entry[i][j], row = role.row_is_query ? i : j;
      int64_t found = -1;
      for (size_t b = 0; b < plan.blocks.size() && found < 0; ++b) {
        const EntryBlock& blk = plan.blocks[b];
        if (e >= blk.first_entry && e < blk.first_entry + blk.entries && row >= blk.first_row &&
            row < blk.first_row + blk.rows)
          found = block_offset[b] + (row - blk.first_row) * blk.entries + (e - blk.first_entry);
      }
      if (found < 0)
        throw Error("internal: pair (" + std::to_string(i) + ", " + std::to_string(j) + ") entry " +
                    std::to_string(e) + " is not covered by any block");
      idx[i * N + j] = found;
    }
  plan.pair_index = index;
  return plan;
}

at::Tensor project_pairs(const at::Tensor& f, const at::Tensor& bank, const PairPlan& plan,
                         const at::Tensor& pair_index) {
  const int64_t B = f.size(0), N = f.size(1), C = f.size(2), D = bank.size(2);
  std::vector<at::Tensor> outputs;
  outputs.reserve(plan.blocks.size());
  for (const EntryBlock& blk : plan.blocks) {
    // [C, n, D] slice of the bank viewed as one C x (n D) matrix: no weight copy.
    const at::Tensor weights = bank.narrow(1, blk.first_entry, blk.entries).reshape({C, blk.entries * D});
    const at::Tensor rows = f.narrow(1, blk.first_row, blk.rows);
    outputs.push_back(at::matmul(rows, weights).view({B, blk.rows * blk.entries, D}));
  }
  const at::Tensor all = outputs.size() == 1 ? outputs[0] : at::cat(outputs, 1);
  return all.index_select(1, pair_index).view({B, N, N, D});
}

}  // namespace translution
