#pragma once
// Work and size of a ViT, counted from its config: the exact multiply-adds the
// equations require per image (each relative projection N^2 C C', each plain one
// N C C'), independent of how an implementation arranges them.
#include <cstdint>

#include "nn/vit_config.h"
#include "util/engine_options.h"

namespace translution {

struct ModelCost {
  double exact_macs = 0;  // per image, forward, every token through every block (the papers' count)
  // The same when the last block computes the CLS token's output alone (the
  // default: nn/vit.h), the only one the head reads: M = 1 query there.
  double cls_only_macs = 0;
  // The same per image in a batch of two or more, where self-attention's and
  // LoR's CLS query meets the unprojected inputs (nn/self_attention.h).
  double cls_only_batch_macs = 0;
  // Weights that forward never reads then: the last block's offset matrices no
  // pair of the CLS query selects (Translution and LoR banks).
  int64_t cls_only_unread_weights = 0;
  int64_t relative_entries = 0;  // E: matrices per relative projection (per layer)
};

// The batch counts follow `engine`'s query_reassociation (the only option that
// changes which products run, rather than how).
ModelCost model_cost(const EngineOptions& engine, const ViTConfig& config);

}  // namespace translution
