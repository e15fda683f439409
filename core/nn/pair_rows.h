#pragma once
// What the relative logits and values share (nn/relative_logits.h,
// nn/relative_values.h): each side's pair-sorted rows, projected (relative) or
// gathered (plain); whether saved rows may take their gradients in place; the
// precision and weight copies a forward uses; an order as the CPU's fused blocks
// take it (cpu/blocked_relative.h). Internal to those two operators.
#include <initializer_list>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/custom_function.h>

#include "cpu/blocked_relative.h"
#include "nn/pair_order.h"
#include "util/engine_options.h"

namespace translution {

// [B, N, ...] -> [N, B, ...], contiguous.
at::Tensor token_major(const at::Tensor& x);

// Whether saved pair rows may take their own gradients in place (no new [R, B, D]
// tensors at the backward peak): when nothing can read them again.
bool rows_are_scratch(torch::autograd::AutogradContext* ctx, bool recomputed);

// Whether this forward records gradients in bf16 precision (cpu/bf16_gemm.h),
// asked before the autograd function (inside it gradients are off).
bool training_in_bf16(const EngineOptions& engine, std::initializer_list<const at::Tensor*> inputs);

// Whether this forward may read bfloat16 copies of the banks (cpu/bf16_weights.h):
// one without gradients, asked before the autograd function.
bool reads_weight_copies();

// Autograd functions take no undefined inputs: a plain side passes an empty bank.
bool has_bank(const at::Tensor& bank);
at::Tensor bank_or_empty(const at::Tensor& bank, const at::Tensor& like);

// One side of the dot product for every sorted row: projected (relative) or gathered (plain).
at::Tensor side_rows(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& bank,
                     const at::Tensor& rows, const std::vector<int64_t>& offset, bool bf16, bool copies);
// Gradient of one side: into the token-major input and the bank (relative) or just the vectors (plain).
std::pair<at::Tensor, at::Tensor> side_backward(const EngineOptions& engine, const at::Tensor& xt,
                                                const at::Tensor& bank, const at::Tensor& rows,
                                                const std::vector<int64_t>& offset, const at::Tensor& ds,
                                                bool bf16);

// The order as the CPU's fused blocks take it (views of its tensors; it must outlive them).
SortedPairs sorted_pairs(const PairOrder& order);

}  // namespace translution
