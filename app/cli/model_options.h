#pragma once
// The options that describe a model, shared by every command that builds one.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "nn/vit_config.h"

namespace translution::cli {

struct ModelOptions {
  std::string model, preset = "A", image, first_model, lor_dims, layout;
  int64_t patch = 0, depth = 0, dim = 0, heads = 0, head_dim = 0, mlp_dim = 0, channels = 0, classes = 0,
          lor_dim = 0, first_blocks = 0;
  bool no_lor_shared = false, lor_value_slices = false;
  const CLI::App* app = nullptr;  // where they were added: which were given

  bool given(const std::string& option) const { return app && app->count(option) > 0; }
  // The preset's config with the options given on top, validated.
  ViTConfig config() const;
};

// Adds --model, --preset, --image, --patch, --depth and the widths to `app`, bound to
// `options`. Without `widths_in_help` the widths are left out of its --help, which
// points to `model info --help` for them instead.
void add_model_options(CLI::App& app, ModelOptions& options, bool widths_in_help = false);

}  // namespace translution::cli
