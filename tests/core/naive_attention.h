#pragma once
// Reference implementations written straight from the papers' equations, one
// (query, source) pair at a time, for checking the fast operators. Slow on purpose.
#include <torch/nn/module.h>

#include "nn/attention.h"

namespace translution::test_support {

// Reads the module's parameters by name and recomputes its forward pass.
at::Tensor naive_attention(const AttentionModule& module, const AttentionSpec& spec, const AttentionShape& shape,
                           const TokenLayout& layout, const at::Tensor& x);

}  // namespace translution::test_support
