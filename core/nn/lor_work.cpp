#include "nn/lor_work.h"

#include "nn/self_attention.h"

namespace translution {
namespace {

// The bank entries the order's visible pairs use, ascending: those with rows.
std::vector<int64_t> used_entries(const PairOrder& order) {
  std::vector<int64_t> used;
  for (size_t e = 0; e + 1 < order.entry_offset.size(); ++e)
    if (order.entry_offset[e + 1] > order.entry_offset[e]) used.push_back(int64_t(e));
  return used;
}

// attend()'s multiply-adds per image: every token projected, pair by pair.
double plain_macs(const AttentionSpec& s, const AttentionShape& shape, double N, double M) {
  const double C = double(shape.dim), D = double(shape.inner()), H = double(shape.heads);
  const double c1 = double(s.lor_c1) * H, c2 = double(s.lor_c2) * H;
  double macs = (needs_output_projection(shape) ? M * D * C : 0.0) + 2 * M * N * D;
  if (!s.lor_shared) macs -= M * N * D;           // no shared values to sum
  if (s.lor_shared) macs += (M + 2 * N) * C * D;  // q projected for the M queries alone
  if (s.rel_q || s.rel_k) {
    macs += s.rel_q ? M * C * c1 + M * N * c1 * c2 : M * C * c2;
    macs += s.rel_k ? N * C * c1 + M * N * c1 * c2 : N * C * c2;
    macs += M * N * c2;  // low-rank logits
    if (!s.lor_shared) macs -= M * N * D;
  }
  if (s.rel_v) macs += N * C * c1 + M * N * c1 * c2 + M * N * H * c2 + M * H * c2 * double(shape.head_dim);
  return macs;
}

// attend_reassociated()'s, for M queries and G entries (every pair of (query, entry) computed).
double reassociated_macs(const AttentionSpec& s, const AttentionShape& shape, double N, double M, double G) {
  const double C = double(shape.dim), D = double(shape.inner()), H = double(shape.heads);
  const double c1 = double(s.lor_c1) * H, c2 = double(s.lor_c2) * H, S = M * G;
  double macs = needs_output_projection(shape) ? M * D * C : 0.0;
  if (s.lor_shared) macs += 3 * M * C * D;  // q, and the query through W^k; the summed inputs through W^v
  if (s.rel_q || s.rel_k) {
    macs += M * C * (s.rel_q ? c1 : c2) + (s.rel_q ? S * c1 * c2 : 0.0);
    macs += s.rel_k ? S * (c1 * c2 + H * c1 * C) : S * c2 * C;
  }
  macs += 2 * S * H * N * C;  // each entry's logits and weighted inputs
  if (s.rel_v) macs += S * H * (C * c1 + c1 * c2 + c2 * double(shape.head_dim));
  return macs;
}

}  // namespace

// The entries to group the order's pairs by, where the reassociated path applies; else empty.
std::vector<int64_t> reassociated_entries(const EngineOptions& engine, const AttentionSpec& s,
                                          const AttentionShape& shape, const PairOrder& order,
                                          int64_t images) {
  const int64_t N = order.tokens, queries = order.queries;
  // Rotated keys differ per token, so they cannot be folded into the query's side;
  // value slices are taken after the sum over pairs, which that path reorders.
  if (s.rotary || s.lor_value_slices || !reassociation_may_apply(engine, N, queries, images)) return {};
  std::vector<int64_t> entries = used_entries(order);
  if (entries.empty() || reassociated_macs(s, shape, double(N), double(queries), double(entries.size())) >=
                             plain_macs(s, shape, double(N), double(queries)))
    return {};
  return entries;
}

double lor_attention_macs(const EngineOptions& engine, const AttentionSpec& spec, const AttentionShape& shape,
                          const RelativeTable& table, int64_t queries, int64_t images) {
  const std::vector<int64_t> entries =
      reassociated_entries(engine, spec, shape, make_pair_order(table, queries), images);
  const double N = double(table.tokens()), M = double(queries);
  return entries.empty() ? plain_macs(spec, shape, N, M)
                         : reassociated_macs(spec, shape, N, M, double(entries.size()));
}

}  // namespace translution
