#include "cpu/blocked_relative.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cpu/bf16_weights.h"
#include "cpu/pair_blocks.h"
#include "cpu/pair_matrices.h"
#include "util/kept_options.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One side of the arithmetic: bf16 products where the bank takes them, and its
// bfloat16 copy in a forward without gradients (as the plain projection reads them).
PairSide pair_side(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& bank,
                   const at::Tensor& rows, bool bf16, bool copies, const at::Tensor& saved = at::Tensor()) {
  const bool relative = bank.defined() && bank.numel() > 0,
             products_in_bf16 = relative && bf16 && bf16_bank(bank);
  const Bf16Bits* w16 = relative ? weight_copy(engine, bank, xt, products_in_bf16, copies) : nullptr;
  return make_pair_side(xt, relative ? bank : at::Tensor(), rows, products_in_bf16, w16, saved);
}

class BlockedRelativeLogits : public torch::autograd::Function<BlockedRelativeLogits> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qt, const at::Tensor& q_bank,
                            const at::Tensor& kt, const at::Tensor& k_bank, const SortedPairs& pairs,
                            int64_t heads, bool bf16, bool copies, const EngineOptions& engine) {
    keep_options(ctx, engine);
    ctx->saved_data["offset"] = *pairs.offset;
    ctx->saved_data["bf16"] = bf16;
    const PairTable table = pair_table(engine, *pairs.offset, pairs.pair_of_row, pairs.query_of_row,
                                       pairs.source_of_row, pairs.queries, kt.size(0));
    PairSide q = pair_side(engine, qt, q_bank, pairs.query_of_row, bf16, copies),
             k = pair_side(engine, kt, k_bank, pairs.source_of_row, bf16, copies);
    // Copies are read only where no gradient is recorded: then nothing needs the rows.
    const at::Tensor grid = blocked_logits(table, q, k, heads, !copies && !engine.recompute_pair_rows);
    ctx->save_for_backward({qt, q_bank, kt, k_bank, pairs.pair_of_row, pairs.query_of_row,
                            pairs.source_of_row, q.saved, k.saved});
    return grid;  // [B, H, M, N]
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &qt = s[0], &q_bank = s[1], &kt = s[2], &k_bank = s[3];
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const EngineOptions engine = kept_options(ctx);
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    const PairTable table = pair_table(engine, offset, s[4], s[5], s[6], grads[0].size(2), kt.size(0));
    const PairSide q = pair_side(engine, qt, q_bank, s[5], bf16, false, s[7]);
    const PairSide k = pair_side(engine, kt, k_bank, s[6], bf16, false, s[8]);
    auto [dqt, dq_bank, dkt, dk_bank] = blocked_logits_backward(table, q, k, grads[0]);
    return {dqt, dq_bank, dkt, dk_bank, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class BlockedRelativeValues : public torch::autograd::Function<BlockedRelativeValues> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& alpha, const at::Tensor& xt,
                            const at::Tensor& bank, const SortedPairs& pairs, bool head_sliced, bool bf16,
                            bool copies, const EngineOptions& engine) {
    keep_options(ctx, engine);
    const int64_t B = alpha.size(0), M = alpha.size(2);  // M queries
    ctx->saved_data["offset"] = *pairs.offset;
    ctx->saved_data["head_sliced"] = head_sliced;
    const PairTable table = pair_table(engine, *pairs.offset, pairs.pair_of_row, pairs.query_of_row,
                                       pairs.source_of_row, M, xt.size(0));
    PairSide v = pair_side(engine, xt, bank, pairs.source_of_row, bf16, copies);
    at::Tensor alpha_planes;  // for backward, where one may run
    const at::Tensor out =
        blocked_values(table, alpha, v, head_sliced, !copies && !engine.recompute_pair_rows,
                       copies ? nullptr : &alpha_planes);  // [M, B, H, *]
    ctx->save_for_backward(
        {xt, bank, v.saved, alpha_planes, pairs.pair_of_row, pairs.query_of_row, pairs.source_of_row});
    ctx->saved_data["bf16"] = v.bf16;
    return head_sliced ? out.view({M, B, bank.size(2)}).transpose(0, 1) : out.transpose(0, 1);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &xt = s[0], &bank = s[1], &alpha = s[3];  // alpha's pair-ordered planes [B H, R]
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const EngineOptions engine = kept_options(ctx);
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    const bool head_sliced = ctx->saved_data["head_sliced"].toBool();
    const int64_t M = grads[0].size(1), B = grads[0].size(0), D = bank.size(2), H = alpha.size(0) / B;
    const PairTable table = pair_table(engine, offset, s[4], s[5], s[6], M, xt.size(0));
    const PairSide v = pair_side(engine, xt, bank, s[6], bf16, false, s[2]);
    const at::Tensor dout =
        head_sliced ? grads[0].transpose(0, 1).reshape({M, B, H, D / H}) : grads[0].transpose(0, 1);
    auto [dalpha, dxt, dbank] = blocked_values_backward(table, alpha, v, dout, head_sliced);
    return {dalpha, dxt, dbank, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool blocked_relative_applies(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors,
                              const at::Tensor& pair_of_row) {
  return pair_of_row.is_cpu() && pair_blocks_apply(engine, tensors);
}

at::Tensor blocked_relative_logits(const EngineOptions& engine, const SortedPairs& pairs,
                                   const at::Tensor& q_xt, const at::Tensor& q_bank, const at::Tensor& k_xt,
                                   const at::Tensor& k_bank, int64_t heads, bool bf16, bool copies) {
  return BlockedRelativeLogits::apply(q_xt, q_bank, k_xt, k_bank, pairs, heads, bf16, copies, engine);
}

at::Tensor blocked_relative_values(const EngineOptions& engine, const SortedPairs& pairs,
                                   const at::Tensor& alpha, const at::Tensor& xt, const at::Tensor& bank,
                                   bool head_sliced, bool bf16, bool copies) {
  return BlockedRelativeValues::apply(alpha, xt, bank, pairs, head_sliced, bf16, copies, engine);
}

}  // namespace translution
