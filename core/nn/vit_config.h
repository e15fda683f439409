#pragma once
// Everything that defines a ViT, as one struct that round-trips through
// key=value text (checkpoints store it; `model info` prints it).
#include <string>

#include "nn/attention_spec.h"

namespace translution {

// The most blocks a config may name (validate refuses more): far beyond any ViT the
// papers train, and few enough that a config read from a file cannot make building
// or checking its blocks run for hours.
constexpr int64_t kMaxDepth = 1024;

struct ViTConfig {
  std::string model = "translution";  // operator name (translution model list)
  std::string preset = "A";           // where depth/width came from (informational)
  int64_t image_height = 84, image_width = 84, patch = 12, channels = 1, classes = 10;
  int64_t depth = 6, dim = 192, heads = 3, head_dim = 64, mlp_dim = 768;
  int64_t lor_c1 = 8, lor_c2 = 8;
  bool lor_shared = true;
  bool lor_value_slices = false;    // AttentionSpec::lor_value_slices
  bool position_embedding = false;  // learned absolute embedding; on for "attention" by default
  // How attention reads the patches: "grid" (2-D offsets over the patch grid),
  // "sequence" (the patches row by row as one sequence: 1-D offsets) or
  // "causal-sequence" (1-D, each patch sees the earlier ones; CLS reads them all).
  std::string layout = "grid";
  // Hybrid: the first `first_blocks` blocks use `first_model` instead of `model`.
  std::string first_model;
  int64_t first_blocks = 0;

  int64_t grid_height() const { return image_height / patch; }
  int64_t grid_width() const { return image_width / patch; }
  int64_t tokens() const { return grid_height() * grid_width() + 1; }
  TokenLayout token_layout() const;  // the layout every block's attention uses
  AttentionSpec attention_spec(int64_t block) const;
  std::string block_model(int64_t block) const;

  std::string to_text() const;
  static ViTConfig from_text(const std::string& text);  // throws translution::Error naming the bad key/value
  void validate() const;
  bool operator==(const ViTConfig& other) const { return to_text() == other.to_text(); }
};

// Presets of ICLR Table 1 (A, B, C) and the preprint's small ViT ("tiny": dim 64,
// MLP 128, one head of 64). Sets depth and widths; `model` picks the embedding default.
ViTConfig preset_config(const std::string& preset, const std::string& model);

}  // namespace translution
