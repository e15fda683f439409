#pragma once
// Reference implementations written straight from the papers' equations, one
// (query, source) pair at a time, for checking the fast operators. Slow on purpose.
#include <array>
#include <functional>

#include <torch/nn/module.h>

#include "nn/attention.h"

namespace translution::test_support {

// Reads the module's parameters by name and recomputes its forward pass.
at::Tensor naive_attention(const AttentionModule& module, const AttentionSpec& spec,
                           const AttentionShape& shape, const TokenLayout& layout, const at::Tensor& x);

// Knocked-out matrices, said from the equation: knocked(role, entry) for role 0 (q),
// 1 (k), 2 (v) and an entry in the paper's indexing (offsets (dy, dx) row-major over
// [-(H-1), H-1] x [-(W-1), W-1], then CLS itself, CLS in, CLS out); such a matrix
// is replaced by replacement[role] wherever a pair would use it.
struct NaiveKnockout {
  std::function<bool(int role, int64_t entry)> knocked;
  std::array<at::Tensor, 3> replacement;
};

// The same forward with the knockout's matrices replaced (grids and non-causal sequences).
at::Tensor naive_attention(const AttentionModule& module, const AttentionSpec& spec,
                           const AttentionShape& shape, const TokenLayout& layout, const at::Tensor& x,
                           const NaiveKnockout& knockout);

}  // namespace translution::test_support
