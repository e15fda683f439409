#include "nn/vit_config.h"

#include <algorithm>

#include "nn/model_size.h"
#include "util/error.h"
#include "util/key_value.h"

namespace translution {
namespace {

const std::vector<KeyValueField<ViTConfig>>& fields() {
  using C = ViTConfig;
  static const std::vector<KeyValueField<C>> f = {
      string_field("model", &C::model),
      string_field("preset", &C::preset),
      int_field("image_height", &C::image_height),
      int_field("image_width", &C::image_width),
      int_field("patch", &C::patch),
      int_field("channels", &C::channels),
      int_field("classes", &C::classes),
      int_field("depth", &C::depth),
      int_field("dim", &C::dim),
      int_field("heads", &C::heads),
      int_field("head_dim", &C::head_dim),
      int_field("mlp_dim", &C::mlp_dim),
      int_field("lor_c1", &C::lor_c1),
      int_field("lor_c2", &C::lor_c2),
      bool_field("lor_shared", &C::lor_shared),
      bool_field("lor_value_slices", &C::lor_value_slices),
      bool_field("position_embedding", &C::position_embedding),
      string_field("layout", &C::layout),
      string_field("first_model", &C::first_model),
      int_field("first_blocks", &C::first_blocks),
  };
  return f;
}

}  // namespace

TokenLayout ViTConfig::token_layout() const {
  if (layout == "sequence") return TokenLayout::sequence(grid_height() * grid_width(), false, true);
  if (layout == "causal-sequence") return TokenLayout::sequence(grid_height() * grid_width(), true, true);
  return TokenLayout::grid(grid_height(), grid_width(), true);
}

std::string ViTConfig::block_model(int64_t block) const {
  return block < first_blocks && !first_model.empty() ? first_model : model;
}

AttentionSpec ViTConfig::attention_spec(int64_t block) const {
  AttentionSpec spec = attention_choice(block_model(block)).spec;
  spec.lor_c1 = lor_c1;
  spec.lor_c2 = lor_c2;
  spec.lor_shared = lor_shared;
  spec.lor_value_slices = lor_value_slices;
  return spec;
}

std::string ViTConfig::to_text() const { return fields_to_text(*this, fields()); }

ViTConfig ViTConfig::from_text(const std::string& text) {
  ViTConfig c;
  fields_from_text(c, text, fields(), "config");
  c.validate();
  return c;
}

void ViTConfig::validate() const {
  auto positive = [](const char* what, int64_t v) {
    if (v < 1) throw Error(std::string("config: ") + what + " must be at least 1, got " + std::to_string(v));
  };
  positive("image_height", image_height);
  positive("image_width", image_width);
  positive("patch", patch);
  positive("channels", channels);
  positive("classes", classes);
  positive("depth", depth);
  positive("dim", dim);
  positive("heads", heads);
  positive("head_dim", head_dim);
  positive("mlp_dim", mlp_dim);
  // The preset is a label a file may carry (the rest are checked against their names): it is
  // printed, so it may not hold control characters that would drive a terminal.
  if (std::any_of(preset.begin(), preset.end(),
                  [](char ch) { return (unsigned char)ch < 0x20 || ch == 0x7f; }))
    throw Error("config: preset holds a control character");
  if (layout != "grid" && layout != "sequence" && layout != "causal-sequence")
    throw Error("config: layout '" + layout + "' is none of grid, sequence, causal-sequence");
  if (image_height % patch != 0 || image_width % patch != 0)
    throw Error("config: patch size " + std::to_string(patch) + " does not divide the " +
                std::to_string(image_height) + "x" + std::to_string(image_width) + " image");
  if (first_blocks < 0 || first_blocks > depth)
    throw Error("config: first_blocks must be between 0 and depth (" + std::to_string(depth) + "), got " +
                std::to_string(first_blocks));
  if (first_blocks > 0 && first_model.empty())
    throw Error("config: first_blocks is set but first_model is empty");
  // Printed whether or not a block uses it: a known operator's name, never a terminal's controls.
  if (!first_model.empty()) attention_choice(first_model);
  // A bound a file can name before anything is built: the papers' deepest ViT has 24 blocks.
  if (depth > kMaxDepth)
    throw Error("config: depth " + std::to_string(depth) + " is more than the " + std::to_string(kMaxDepth) +
                " blocks a model may have");
  // Blocks differ only in their operator: the first `first_blocks` may use another one.
  attention_spec(0).validate();  // also checks the model names
  attention_spec(depth - 1).validate();
  parameter_count(
      *this);  // a size beyond 64-bit integers is an error here, never an overflow inside LibTorch
}

ViTConfig preset_config(const std::string& preset, const std::string& model) {
  ViTConfig c;
  c.model = model;
  c.preset = preset;
  if (preset == "A") {
    c.depth = 6;
    c.dim = 192;
    c.heads = 3;
    c.head_dim = 64;
    c.mlp_dim = 768;
  } else if (preset == "B") {
    c.depth = 12;
    c.dim = 192;
    c.heads = 3;
    c.head_dim = 64;
    c.mlp_dim = 768;
  } else if (preset == "C") {
    c.depth = 12;
    c.dim = 384;
    c.heads = 6;
    c.head_dim = 64;
    c.mlp_dim = 1536;
  } else if (preset == "tiny") {
    c.depth = 6;
    c.dim = 64;
    c.heads = 1;
    c.head_dim = 64;
    c.mlp_dim = 128;
  } else {
    throw Error("unknown preset '" + preset + "' (expected A, B, C or tiny)");
  }
  c.position_embedding = attention_choice(model).absolute_embedding;
  return c;
}

}  // namespace translution
