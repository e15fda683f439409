#include "nn/relative_values.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cpu/gather_rows.h"
#include "cpu/pair_blocks.h"
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

// The reverse: rows[r, b, h] = alpha[b, h, i, j] for the pair (i, j) of row r.
at::Tensor grid_to_pairs(const at::Tensor& alpha, const at::Tensor& pair_of_row) {
  if (at::Tensor engine = gather_pairs(alpha, pair_of_row); engine.defined()) return engine;
  const int64_t B = alpha.size(0), H = alpha.size(1), M = alpha.size(2), N = alpha.size(3);
  return gather_rows(alpha.permute({2, 3, 0, 1}).reshape({M * N, B, H}), pair_of_row);  // [R, B, H]
}

class RelativeValues : public torch::autograd::Function<RelativeValues> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& alpha, const at::Tensor& input,
                            const at::Tensor& bank, const at::Tensor& pair_of_row,
                            const at::Tensor& query_of_row, const at::Tensor& source_of_row,
                            const std::vector<int64_t>& offset, bool head_sliced, bool bf16, bool copies,
                            const EngineOptions& engine) {
    keep_options(ctx, engine);
    const int64_t B = alpha.size(0), M = alpha.size(2);  // M queries
    const at::Tensor xt = token_major(input);
    ctx->saved_data["offset"] = offset;
    ctx->saved_data["head_sliced"] = head_sliced;
    if (blocks_apply(engine, {&alpha, &xt, &bank}, pair_of_row)) {
      const PairTable table =
          pair_table(engine, offset, pair_of_row, query_of_row, source_of_row, M, xt.size(0));
      PairSide v = pair_side(engine, xt, bank, source_of_row, bf16, copies);
      at::Tensor alpha_planes;  // for backward, where one may run
      const at::Tensor out =
          blocked_values(table, alpha, v, head_sliced, !copies && !engine.recompute_pair_rows,
                         copies ? nullptr : &alpha_planes);
      ctx->save_for_backward({xt, bank, v.saved, alpha_planes, pair_of_row, query_of_row, source_of_row});
      ctx->saved_data["bf16"] = v.bf16;
      ctx->saved_data["blocked"] = true;
      return head_sliced ? out.view({M, B, bank.size(2)}).transpose(0, 1) : out.transpose(0, 1);
    }
    bf16 = bf16 && bf16_bank(bank);
    const at::Tensor v = project_rows(engine, xt, source_of_row, bank, offset, bf16, copies);  // [R, B, D]
    const int64_t D = v.size(2);
    const at::Tensor a = grid_to_pairs(alpha, pair_of_row);                               // [R, B, H]
    const at::Tensor out = scatter_weighted(engine, a, v, query_of_row, M, head_sliced);  // [M, B, H, *]
    ctx->save_for_backward({xt, bank, engine.recompute_pair_rows ? at::Tensor() : v, a, pair_of_row,
                            query_of_row, source_of_row});
    ctx->saved_data["bf16"] = bf16;
    return head_sliced ? out.view({M, B, D}).transpose(0, 1) : out.transpose(0, 1);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &xt = s[0], &bank = s[1], &a = s[3], &pair_of_row = s[4], &query_of_row = s[5],
                     &source_of_row = s[6];
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const EngineOptions engine = kept_options(ctx);
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    const bool head_sliced = ctx->saved_data["head_sliced"].toBool();
    if (ctx->saved_data.count("blocked")) {  // s[3] is alpha's pair-ordered planes [B H, R]
      const at::Tensor& alpha = s[3];
      const int64_t M = grads[0].size(1), B = grads[0].size(0), D = bank.size(2), H = alpha.size(0) / B;
      const PairTable table =
          pair_table(engine, offset, pair_of_row, query_of_row, source_of_row, M, xt.size(0));
      const PairSide v = pair_side(engine, xt, bank, source_of_row, bf16, false, s[2]);
      const at::Tensor dout =
          head_sliced ? grads[0].transpose(0, 1).reshape({M, B, H, D / H}) : grads[0].transpose(0, 1);
      auto [dalpha, dxt, dbank] = blocked_values_backward(table, alpha, v, dout, head_sliced);
      return {dalpha,       dxt.transpose(0, 1), dbank,        at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor(), at::Tensor(),        at::Tensor(), at::Tensor(), at::Tensor()};
    }
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
    const at::Tensor dinput = dxt.transpose(0, 1);
    return {dalpha_full.view({M, N, B, H}).permute({2, 3, 0, 1}),
            dinput,
            dbank,
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
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
  const at::Tensor a = autocast_input(alpha), x = autocast_input(input), w = autocast_input(bank);
  return RelativeValues::apply(a, x, w, o.pair_of_row, o.query_of_row, o.source_of_row, o.entry_offset,
                               head_sliced, training_in_bf16(engine, {&a, &x, &w}), reads_weight_copies(),
                               engine);
}

}  // namespace translution
