#pragma once
// Work and size of a ViT, counted from its config: the exact multiply-adds the
// equations require per image (each relative projection N^2 C C', each plain one
// N C C'), independent of how an implementation arranges them.
#include <cstdint>

#include "nn/vit_config.h"

namespace translution {

struct ModelCost {
  double exact_macs = 0;         // per image, forward
  int64_t relative_entries = 0;  // E: matrices per relative projection (per layer)
};

ModelCost model_cost(const ViTConfig& config);

}  // namespace translution
