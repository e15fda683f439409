#include "nn/relative_logits.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cpu/blocked_relative.h"
#include "cpu/gather_rows.h"
#include "cpu/pair_kernels.h"
#include "nn/pair_rows.h"
#include "util/autocast_scope.h"
#include "util/engine_options.h"
#include "util/kept_options.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// logits[b, h, i, j] = dots[r, b, h] where row r is the pair (i, j) (i < M queries,
// j < N keys); 0 where no row is (pairs a causal mask hides). On CPU one pass
// straight into [B, H, M, N] (contiguous, so the softmax after it runs in place of
// a copy); elsewhere an index_copy_ into [M N, B, H] and a permuted view of it.
at::Tensor pairs_to_grid(const at::Tensor& dots, const at::Tensor& pair_of_row, int64_t M, int64_t N) {
  if (at::Tensor engine = scatter_pairs(dots, pair_of_row, M, N); engine.defined()) return engine;
  const int64_t B = dots.size(1), H = dots.size(2);
  at::Tensor full = at::zeros({M * N, B, H}, dots.options());
  full.index_copy_(0, pair_of_row, dots);
  return full.view({M, N, B, H}).permute({2, 3, 0, 1});  // [B, H, M, N]
}

// a_ij = q_ij . k_ji per head on the pair-sorted rows: each side's rows projected
// by its pair's matrix (relative) or gathered (plain), one dot product per row and
// head, scattered into the [B, H, M, N] grid.
class RelativeLogits : public torch::autograd::Function<RelativeLogits> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qt, const at::Tensor& q_bank,
                            const at::Tensor& kt, const at::Tensor& k_bank, const PairOrder& o, int64_t heads,
                            bool bf16, bool copies, const EngineOptions& engine) {
    keep_options(ctx, engine);
    ctx->saved_data["offset"] = o.entry_offset;
    ctx->saved_data["bf16"] = bf16;
    const at::Tensor sq =
        side_rows(engine, qt, q_bank, o.query_of_row, o.entry_offset, bf16, copies);  // [R, B, D]
    const at::Tensor sk =
        side_rows(engine, kt, k_bank, o.source_of_row, o.entry_offset, bf16, copies);  // [R, B, D]
    const at::Tensor dots = pair_dots(engine, sq, sk, heads);                          // [R, B, H]
    const bool keep = !engine.recompute_pair_rows;
    ctx->save_for_backward({qt, q_bank, kt, k_bank, o.pair_of_row, o.query_of_row, o.source_of_row,
                            keep ? sq : at::Tensor(), keep ? sk : at::Tensor()});
    return pairs_to_grid(dots, o.pair_of_row, o.queries, kt.size(0));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &qt = s[0], &q_bank = s[1], &kt = s[2], &k_bank = s[3], &pair_of_row = s[4];
    const at::Tensor &query_of_row = s[5], &source_of_row = s[6];
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const EngineOptions engine = kept_options(ctx);
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    const at::Tensor sq =
        s[7].defined() ? s[7] : side_rows(engine, qt, q_bank, query_of_row, offset, bf16, false);
    const at::Tensor sk =
        s[8].defined() ? s[8] : side_rows(engine, kt, k_bank, source_of_row, offset, bf16, false);
    const int64_t B = sq.size(1), H = grads[0].size(1), M = grads[0].size(2), N = grads[0].size(3);
    const at::Tensor dfull = grads[0].permute({2, 3, 0, 1}).reshape({M * N, B, H});
    const bool scratch = rows_are_scratch(ctx, !s[7].defined() && !s[8].defined());
    auto [dsq, dsk] = pair_dots_backward(engine, sq, sk, gather_rows(dfull, pair_of_row), scratch);
    auto [dqt, dq_bank] = side_backward(engine, qt, q_bank, query_of_row, offset, dsq, bf16);
    auto [dkt, dk_bank] = side_backward(engine, kt, k_bank, source_of_row, offset, dsk, bf16);
    return {dqt, dq_bank, dkt, dk_bank, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor relative_logits(const EngineOptions& engine, const PairOrder& o, const at::Tensor& q_input,
                           const at::Tensor& q_bank, const at::Tensor& k_input, const at::Tensor& k_bank,
                           int64_t heads) {
  // Under autocast the products run in its dtype throughout (util/autocast_scope.h).
  const at::Tensor qt = token_major(autocast_input(q_input)), kt = token_major(autocast_input(k_input));
  const at::Tensor q_w = bank_or_empty(autocast_input(q_bank), qt),
                   k_w = bank_or_empty(autocast_input(k_bank), kt);
  const bool bf16 = training_in_bf16(engine, {&qt, &q_w, &kt, &k_w}), copies = reads_weight_copies();
  if (blocked_relative_applies(engine, {&qt, &q_w, &kt, &k_w}, o.pair_of_row))  // the CPU's fused blocks
    return blocked_relative_logits(engine, sorted_pairs(o), qt, q_w, kt, k_w, heads, bf16, copies);
  return RelativeLogits::apply(qt, q_w, kt, k_w, o, heads, bf16, copies, engine);
}

}  // namespace translution
