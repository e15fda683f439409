#pragma once
// What LoR-Translution's attention costs in each of its two exact orders, and
// which one it takes: every pair projected (attend()), or, for a few queries in a
// batch, each query meeting the unprojected inputs per bank entry
// (attend_reassociated()); the latter where it is fewer multiply-adds. The same
// counts are the model's exact work (nn/model_cost.h).
#include <cstdint>
#include <vector>

#include "nn/attention.h"
#include "nn/attention_spec.h"
#include "nn/pair_order.h"
#include "util/engine_options.h"

namespace translution {

// The entries to group the order's pairs by where the reassociated order applies
// and costs less; else empty.
std::vector<int64_t> reassociated_entries(const EngineOptions& engine, const AttentionSpec& s,
                                          const AttentionShape& shape, const PairOrder& order,
                                          int64_t images);

// Multiply-adds of one image's attention for the outputs of its first `queries`
// of the table's tokens (output projection included): as attend() computes them
// for a batch of `images`, with the reassociated order where it applies.
double lor_attention_macs(const EngineOptions& engine, const AttentionSpec& spec, const AttentionShape& shape,
                          const RelativeTable& table, int64_t queries, int64_t images);

}  // namespace translution
