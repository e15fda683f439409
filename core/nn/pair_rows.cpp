#include "nn/pair_rows.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/graph_task.h>

#include "cpu/bf16_gemm.h"
#include "cpu/gather_rows.h"
#include "cpu/pair_matrices.h"
#include "nn/relative_projection.h"

namespace translution {

using torch::autograd::AutogradContext;

at::Tensor token_major(const at::Tensor& x) {
  return x.transpose(0, 1).contiguous();
}  // [B, N, ...] -> [N, B, ...]

// Saved pair rows may take their own gradients in place (no new [R, B, D] tensors
// at the backward peak: docs/performance.md, "Memory and `--recompute`")
// when nothing can read them again: recomputed, or this backward frees the graph
// and no backward of this node was ever recorded (create_graph: the recorded
// ops may hold the rows). With retain_graph a second backward reads them: intact.
bool rows_are_scratch(AutogradContext* ctx, bool recomputed) {
  if (at::GradMode::is_enabled()) ctx->saved_data["recorded"] = true;
  if (recomputed) return true;
  return !ctx->saved_data.count("recorded") && !torch::autograd::get_current_graph_task_keep_graph();
}

// Whether this forward records gradients in bf16 precision (cpu/bf16_gemm.h), asked
// before the autograd function (inside it gradients are off); which banks then
// take bfloat16 products is bf16_bank's choice.
bool training_in_bf16(const EngineOptions& engine, std::initializer_list<const at::Tensor*> inputs) {
  if (engine.precision != DensePrecision::Bf16 || !at::GradMode::is_enabled() || !bf16_gemm_available())
    return false;
  bool grad = false;
  for (const at::Tensor* t : inputs) {
    if (!t->defined() || t->numel() == 0) continue;  // an empty bank: a plain side
    if (!t->is_cpu() || t->scalar_type() != at::kFloat) return false;
    grad = grad || t->requires_grad();
  }
  return grad;
}

// Whether this forward may read bfloat16 copies of the banks (cpu/bf16_weights.h):
// one without gradients, asked before the autograd function (inside it, and in
// every backward, gradients are off).
bool reads_weight_copies() { return !at::GradMode::is_enabled(); }

// Autograd functions take no undefined inputs: a plain side passes an empty bank.
bool has_bank(const at::Tensor& bank) { return bank.defined() && bank.numel() > 0; }
at::Tensor bank_or_empty(const at::Tensor& bank, const at::Tensor& like) {
  return bank.defined() ? bank : at::empty({0}, like.options());
}

// One side of the dot product for every sorted row: projected (relative) or gathered (plain).
at::Tensor side_rows(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& bank,
                     const at::Tensor& rows, const std::vector<int64_t>& offset, bool bf16, bool copies) {
  return has_bank(bank) ? project_rows(engine, xt, rows, bank, offset, bf16 && bf16_bank(bank), copies)
                        : gather_rows(xt, rows);
}

// Gradient of one side: into the token-major input and the bank (relative) or just the vectors (plain).
std::pair<at::Tensor, at::Tensor> side_backward(const EngineOptions& engine, const at::Tensor& xt,
                                                const at::Tensor& bank, const at::Tensor& rows,
                                                const std::vector<int64_t>& offset, const at::Tensor& ds,
                                                bool bf16) {
  if (!has_bank(bank)) return {scatter_rows(ds, rows, xt.size(0)), at::Tensor()};
  return project_rows_backward(engine, xt, rows, bank, offset, ds, bf16 && bf16_bank(bank));
}

SortedPairs sorted_pairs(const PairOrder& order) {
  return {&order.entry_offset, order.pair_of_row, order.query_of_row, order.source_of_row, order.queries};
}

}  // namespace translution
