#include "nn/model_cost.h"

#include "nn/token_layout.h"

namespace translution {
namespace {

double attention_block_macs(const ViTConfig& c, const AttentionSpec& s) {
  const double N = double(c.tokens()), C = double(c.dim), D = double(c.heads * c.head_dim), H = double(c.heads);
  const bool out_proj = !(c.heads == 1 && c.head_dim == c.dim);
  double macs = out_proj ? N * D * C : 0.0;
  macs += 2 * N * N * D;  // logits and the weighted sum of values
  switch (s.method) {
    case AttentionMethod::SelfAttention:
    case AttentionMethod::RelativeBias:
    case AttentionMethod::GatedPositional:
    case AttentionMethod::Rotary:
      return macs + 3 * N * C * D;
    case AttentionMethod::RelativeKeyVector:
    case AttentionMethod::RelativeValueVector: {
      const TokenLayout grid = TokenLayout::grid(c.grid_height(), c.grid_width(), true);
      return macs + 3 * N * C * D + N * double(make_relative_table(grid).entries) * D;  // q r^T or alpha r
    }
    case AttentionMethod::Translution:
      for (bool rel : {s.rel_q, s.rel_k, s.rel_v}) macs += rel ? N * N * C * D : N * C * D;
      return macs;
    case AttentionMethod::LoRTranslution: {
      const double c1 = double(s.lor_c1) * H, c2 = double(s.lor_c2) * H;
      if (!s.lor_shared) macs -= N * N * D;  // no shared values to sum
      if (s.lor_shared) macs += 3 * N * C * D;
      if (s.rel_q || s.rel_k) {
        for (bool rel : {s.rel_q, s.rel_k}) macs += rel ? N * C * c1 + N * N * c1 * c2 : N * C * c2;
        macs += N * N * c2;  // low-rank logits
        if (!s.lor_shared) macs -= N * N * D;
      }
      if (s.rel_v) macs += N * C * c1 + N * N * c1 * c2 + N * N * H * c2 + N * H * c2 * double(c.head_dim);
      return macs;
    }
  }
  return macs;
}

}  // namespace

ModelCost model_cost(const ViTConfig& c) {
  ModelCost cost;
  const double N = double(c.tokens()), C = double(c.dim);
  const double patches = N - 1, patch_dim = double(c.patch * c.patch * c.channels);
  cost.exact_macs = patches * patch_dim * C + C * double(c.classes);
  for (int64_t b = 0; b < c.depth; ++b) {
    cost.exact_macs += attention_block_macs(c, c.attention_spec(b)) + 2 * N * C * double(c.mlp_dim);
  }
  const AttentionSpec last = c.attention_spec(c.depth - 1);
  if (last.relative())
    cost.relative_entries =
        make_relative_table(TokenLayout::grid(c.grid_height(), c.grid_width(), true), last.encoding).entries;
  return cost;
}

}  // namespace translution
