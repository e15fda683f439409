#include "nn/relative_values.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cpu/blocked_relative.h"
#include "cpu/gather_rows.h"
#include "cpu/pair_kernels.h"
#include "cpu/pair_matrices.h"
#include "nn/pair_rows.h"
#include "nn/relative_projection.h"
#include "util/autocast_scope.h"
#include "util/engine_options.h"
#include "util/kept_options.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The reverse of the logits' scatter: rows[r, b, h] = alpha[b, h, i, j] for the pair (i, j) of row r.
at::Tensor grid_to_pairs(const at::Tensor& alpha, const at::Tensor& pair_of_row) {
  if (at::Tensor engine = gather_pairs(alpha, pair_of_row); engine.defined()) return engine;
  const int64_t B = alpha.size(0), H = alpha.size(1), M = alpha.size(2), N = alpha.size(3);
  return gather_rows(alpha.permute({2, 3, 0, 1}).reshape({M * N, B, H}), pair_of_row);  // [R, B, H]
}

// f'_i = sum_j alpha_ij v_ij on the pair-sorted rows: each row's v_ij = x_j W[entry(i, j)]
// projected by its pair's matrix, weighed by alpha_ij and summed into its query's output.
class RelativeValues : public torch::autograd::Function<RelativeValues> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& alpha, const at::Tensor& xt,
                            const at::Tensor& bank, const PairOrder& o, bool head_sliced, bool bf16,
                            bool copies, const EngineOptions& engine) {
    keep_options(ctx, engine);
    const int64_t M = alpha.size(2);  // M queries
    ctx->saved_data["offset"] = o.entry_offset;
    ctx->saved_data["head_sliced"] = head_sliced;
    bf16 = bf16 && bf16_bank(bank);
    const at::Tensor v =
        project_rows(engine, xt, o.source_of_row, bank, o.entry_offset, bf16, copies);  // [R, B, D]
    const int64_t D = v.size(2);
    const at::Tensor a = grid_to_pairs(alpha, o.pair_of_row);                               // [R, B, H]
    const at::Tensor out = scatter_weighted(engine, a, v, o.query_of_row, M, head_sliced);  // [M, B, H, *]
    ctx->save_for_backward({xt, bank, engine.recompute_pair_rows ? at::Tensor() : v, a, o.pair_of_row,
                            o.query_of_row, o.source_of_row});
    ctx->saved_data["bf16"] = bf16;
    return head_sliced ? out.view({M, alpha.size(0), D}).transpose(0, 1) : out.transpose(0, 1);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &xt = s[0], &bank = s[1], &a = s[3], &pair_of_row = s[4], &query_of_row = s[5],
                     &source_of_row = s[6];
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const EngineOptions engine = kept_options(ctx);
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    const bool head_sliced = ctx->saved_data["head_sliced"].toBool();
    const at::Tensor v =
        s[2].defined() ? s[2] : project_rows(engine, xt, source_of_row, bank, offset, bf16, false);
    const int64_t B = v.size(1), D = v.size(2), H = a.size(2), M = grads[0].size(1), N = xt.size(0);
    // Gradient reaching each pair row from its query's output.
    const at::Tensor dout_t = head_sliced ? grads[0].transpose(0, 1).reshape({M, B, H, D / H})
                                          : grads[0].transpose(0, 1);  // [M, B, H, *]
    auto [da, dv] = scatter_weighted_backward(engine, dout_t, a, v, query_of_row, head_sliced,
                                              rows_are_scratch(ctx, !s[2].defined()));
    at::Tensor dalpha_full = at::zeros({M * N, B, H}, da.options());
    dalpha_full.index_copy_(0, pair_of_row, da);
    auto [dxt, dbank] = project_rows_backward(engine, xt, source_of_row, bank, offset, dv, bf16);
    return {dalpha_full.view({M, N, B, H}).permute({2, 3, 0, 1}),
            dxt,
            dbank,
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor relative_values(const EngineOptions& engine, const PairOrder& o, const at::Tensor& alpha,
                           const at::Tensor& input, const at::Tensor& bank, bool head_sliced) {
  // Under autocast the products run in its dtype throughout (util/autocast_scope.h).
  const at::Tensor a = autocast_input(alpha), xt = token_major(autocast_input(input)),
                   w = autocast_input(bank);
  const bool bf16 = training_in_bf16(engine, {&a, &xt, &w}), copies = reads_weight_copies();
  if (blocked_relative_applies(engine, {&a, &xt, &w}, o.pair_of_row))  // the CPU's fused blocks
    return blocked_relative_values(engine, sorted_pairs(o), a, xt, w, head_sliced, bf16, copies);
  return RelativeValues::apply(a, xt, w, o, head_sliced, bf16, copies, engine);
}

}  // namespace translution
