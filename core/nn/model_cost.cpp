#include "nn/model_cost.h"

#include <algorithm>
#include <set>

#include "nn/lor_work.h"
#include "nn/model_size.h"
#include "nn/self_attention.h"
#include "nn/token_layout.h"

namespace translution {
namespace {

// One block's attention for the outputs of its first M of N tokens (every token a
// key and a value), as the engine runs it for a batch of `images`: per-pair terms
// for M N pairs; the query side's projections for M tokens, except the one qkv
// product of the baselines and of self-attention's plain path, which projects q
// for every token too. Self-attention's and LoR's few queries, in a batch, project
// no key or value (self_attention_macs, lor_attention_macs).
double attention_block_macs(const EngineOptions& engine, const ViTConfig& c, const AttentionSpec& s, double M,
                            int64_t images) {
  const double N = double(c.tokens()), C = double(c.dim), D = double(c.heads * c.head_dim);
  const bool out_proj = needs_output_projection({c.dim, c.heads, c.head_dim});
  double macs = out_proj ? M * D * C : 0.0;
  macs += 2 * M * N * D;  // logits and the weighted sum of values
  const double plain_qkv = 3 * N * C * D;
  switch (s.method) {
    case AttentionMethod::SelfAttention:
      return self_attention_macs(engine, {c.dim, c.heads, c.head_dim}, c.tokens(), int64_t(M), images);
    case AttentionMethod::RelativeBias:
    case AttentionMethod::GatedPositional:
    case AttentionMethod::Rotary: return macs + plain_qkv;
    case AttentionMethod::RelativeKeyVector:
    case AttentionMethod::RelativeValueVector:
      return macs + plain_qkv +
             M * double(relative_entries(c, PairEncoding::Relative)) * D;  // q r^T or alpha r
    case AttentionMethod::Translution: {
      const bool rel[3] = {s.rel_q, s.rel_k, s.rel_v};
      for (int role = 0; role < 3; ++role) macs += rel[role] ? M * N * C * D : (role == 0 ? M : N) * C * D;
      return macs;
    }
    case AttentionMethod::LoRTranslution: {
      const RelativeTable table = make_relative_table(c.token_layout(), s.encoding);
      return lor_attention_macs(engine, s, {c.dim, c.heads, c.head_dim}, table, int64_t(M), images);
    }
  }
  return macs;
}

double block_macs(const EngineOptions& engine, const ViTConfig& c, int64_t index, double M,
                  int64_t images = 1) {
  return attention_block_macs(engine, c, c.attention_spec(index), M, images) +
         2 * M * double(c.dim) * double(c.mlp_dim);
}

// Offset matrices of a relative block that no pair of query 0 (CLS) selects.
int64_t unread_by_cls(const ViTConfig& c, const AttentionSpec& s, const RelativeTable& table) {
  std::set<int64_t> used;
  for (int64_t j = 0; j < table.tokens(); ++j)  // row 0 of the pair tables
    if (table.visible[size_t(j)]) used.insert(table.entry_of[size_t(j)]);
  const int64_t per_matrix = s.method == AttentionMethod::Translution
                                 ? c.dim * c.heads * c.head_dim
                                 : s.lor_c1 * c.heads * s.lor_c2 * c.heads;
  const int64_t banks = int64_t(s.rel_q) + int64_t(s.rel_k) + int64_t(s.rel_v);
  return banks * (table.entries - int64_t(used.size())) * per_matrix;
}

}  // namespace

ModelCost model_cost(const EngineOptions& engine, const ViTConfig& c) {
  ModelCost cost;
  const double N = double(c.tokens()), C = double(c.dim);
  const double patches = N - 1, patch_dim = double(c.patch * c.patch * c.channels);
  cost.exact_macs = patches * patch_dim * C + C * double(c.classes);
  cost.cls_only_macs = cost.cls_only_batch_macs = cost.exact_macs;
  // Blocks differ only in their operator (a hybrid's first ones) and in the last
  // block's queries: each kind is counted once and multiplied, so a deep model costs no more to count.
  const int64_t body = c.depth - 1, first = std::min(std::max<int64_t>(c.first_blocks, 0), body);
  auto body_macs = [&](int64_t images) {
    double macs = 0;
    if (first > 0) macs += double(first) * block_macs(engine, c, 0, N, images);
    if (body > first) macs += double(body - first) * block_macs(engine, c, c.depth - 1, N, images);
    return macs;
  };
  const double body_one = body_macs(1);
  cost.exact_macs += body_one + block_macs(engine, c, c.depth - 1, N);
  cost.cls_only_macs += body_one + block_macs(engine, c, c.depth - 1, 1.0);
  cost.cls_only_batch_macs += body_macs(2) + block_macs(engine, c, c.depth - 1, 1.0, 2);
  const AttentionSpec last = c.attention_spec(c.depth - 1);
  if (last.relative()) {
    const RelativeTable table = make_relative_table(c.token_layout(), last.encoding);
    cost.relative_entries = relative_entries(c, last.encoding);
    cost.cls_only_unread_weights = unread_by_cls(c, last, table);
  }
  return cost;
}

}  // namespace translution
