#include "cli/model_options.h"

#include <cstdio>
#include <string>
#include <tuple>

#include "cli/command_line.h"
#include "util/error.h"

namespace translution::cli {

namespace {

// A bound on what --image may say, far past any canvas the memory check lets run.
constexpr long long kMaxImageSide = 1000000;

}  // namespace

void add_model_options(CLI::App& app, ModelOptions& o, bool widths_in_help) {
  o.app = &app;
  app.add_option("--model", o.model, "attention operator (`translution model list`)");
  app.add_option("--preset", o.preset, "ViT size: A, B, C or tiny")->capture_default_str();
  app.add_option("--image", o.image, "image size, 84 or 84x64")->type_name("S|HxW");
  app.add_option("--patch", o.patch, "patch size")->check(at_least("--patch", 1));
  app.add_option("--depth", o.depth, "blocks")->check(at_least("--depth", 1));
  app.add_option("--layout", o.layout,
                 "patches as a 2-D grid, one sequence (1-D offsets), or a causal sequence")
      ->check(CLI::IsMember({"grid", "sequence", "causal-sequence"}))
      ->type_name("grid|sequence|causal-sequence");
  // Widths override the preset's, for models sized to a budget.
  const std::string group = widths_in_help ? "Options" : "";
  if (!widths_in_help) app.footer("Model widths (--dim, --heads, ...): see `translution model info --help`.");
  app.add_option("--dim", o.dim, "token width")->check(at_least("--dim", 1))->group(group);
  app.add_option("--heads", o.heads, "attention heads")->check(at_least("--heads", 1))->group(group);
  app.add_option("--head-dim", o.head_dim, "width of a head")->check(at_least("--head-dim", 1))->group(group);
  app.add_option("--mlp-dim", o.mlp_dim, "MLP hidden width")->check(at_least("--mlp-dim", 1))->group(group);
  app.add_option("--channels", o.channels, "image channels")->check(at_least("--channels", 1))->group(group);
  app.add_option("--classes", o.classes, "output classes")->check(at_least("--classes", 1))->group(group);
  app.add_option("--lor-dim", o.lor_dim, "LoR-Translution's low-rank width, in and out")
      ->check(at_least("--lor-dim", 1))
      ->group(group);
  app.add_option("--lor-dims", o.lor_dims, "LoR-Translution's low-rank widths C1,C2 (in, out)")
      ->type_name("C1,C2")
      ->group(group);
  app.add_flag("--no-lor-shared", o.no_lor_shared, "LoR without the shared projection")->group(group);
  app.add_flag("--lor-value-slices", o.lor_value_slices,
               "LoR's heads weight slices of the low-rank value (as the public code)")
      ->group(group);
  app.add_option("--first-model", o.first_model, "operator of the first blocks (a hybrid)")->group(group);
  app.add_option("--first-blocks", o.first_blocks, "how many blocks use --first-model")
      ->check(at_least("--first-blocks", 0))
      ->group(group);
}

ViTConfig ModelOptions::config() const {
  if (model.empty()) throw Error("missing required option --model");
  ViTConfig c = preset_config(preset, model);
  if (given("--image")) {
    long long h = 0, w = 0;
    char x = 0, extra = 0;
    const int n = std::sscanf(image.c_str(), "%lld%c%lld%c", &h, &x, &w, &extra);
    if (n == 1)
      w = h;
    else if (n != 3 || x != 'x')
      throw Error("--image expects a size like 84 or 84x64, got '" + image + "'");
    if (h < 1 || w < 1 || h > kMaxImageSide || w > kMaxImageSide)  // sscanf clamps what overflows
      throw Error("--image sides must be from 1 to " + std::to_string(kMaxImageSide) + ", got '" + image +
                  "'");
    c.image_height = h;
    c.image_width = w;
  }
  for (auto [option, value, field] : {std::tuple{"--patch", patch, &c.patch},
                                      {"--depth", depth, &c.depth},
                                      {"--dim", dim, &c.dim},
                                      {"--heads", heads, &c.heads},
                                      {"--head-dim", head_dim, &c.head_dim},
                                      {"--mlp-dim", mlp_dim, &c.mlp_dim},
                                      {"--channels", channels, &c.channels},
                                      {"--classes", classes, &c.classes}})
    if (given(option)) *field = value;
  if (given("--lor-dim") && given("--lor-dims"))
    throw Error("--lor-dim and --lor-dims both set LoR's widths: give one");
  if (given("--lor-dim")) c.lor_c1 = c.lor_c2 = lor_dim;
  if (given("--lor-dims")) {
    long long c1 = 0, c2 = 0;
    char comma = 0, extra = 0;
    if (std::sscanf(lor_dims.c_str(), "%lld%c%lld%c", &c1, &comma, &c2, &extra) != 3 || comma != ',')
      throw Error("--lor-dims expects two widths like 8,16 (C1 in, C2 out), got '" + lor_dims + "'");
    c.lor_c1 = c1;
    c.lor_c2 = c2;
  }
  if (given("--layout")) c.layout = layout;
  if (no_lor_shared) c.lor_shared = false;
  if (lor_value_slices) c.lor_value_slices = true;
  c.first_model = first_model;
  c.first_blocks = given("--first-blocks") ? first_blocks : c.first_model.empty() ? 0 : 1;
  c.validate();
  return c;
}

}  // namespace translution::cli
