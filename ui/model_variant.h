#pragma once
// What sets a model apart beyond its operator, preset, patch and depth, in a few
// words for legends and slot titles: "first 2 of translution, LoR 4x12 unshared,
// causal-sequence". Empty for a plain model.
#include <QString>

#include "nn/vit_config.h"

namespace translution::ui {

QString model_variant(const ViTConfig& config);

}  // namespace translution::ui
