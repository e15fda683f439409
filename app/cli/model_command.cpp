// `translution model list|info`
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/model_options.h"
#include "cpu/offset_buckets.h"
#include "nn/memory_estimate.h"
#include "nn/model_cost.h"
#include "nn/model_size.h"
#include "nn/pair_order.h"
#include "nn/token_layout.h"
#include "nn/vit.h"
#include "train/memory_guard.h"
#include "util/error.h"

namespace translution::cli {
namespace {

struct MemoryRow {
  const char* mode;
  int64_t batch;
  MemoryDevice device;
  bool recompute;
  MemoryEstimate estimate;
};

// Inference at batch 1 and training at `batch`, with and without --recompute, on both devices,
// as the engine runs them by default (what `train` and `predict` run without flags).
std::vector<MemoryRow> memory_rows(const ViTConfig& config, int64_t batch) {
  const EngineOptions engine;
  std::vector<MemoryRow> rows;
  for (const MemoryDevice d : {MemoryDevice::Cpu, MemoryDevice::Cuda}) {
    rows.push_back({"infer", 1, d, false, estimate_inference(engine, config, 1, d)});
    for (const bool recompute : {false, true})
      rows.push_back({"train", batch, d, recompute, estimate_training(engine, config, batch, recompute, d)});
  }
  return rows;
}

// A byte count or a count of work as a whole number where one fits, as the estimates are printed.
nlohmann::ordered_json whole(double value) {
  if (std::isfinite(value) && std::fabs(value) < 9e18) return int64_t(std::llround(value));
  return value;
}

nlohmann::ordered_json memory_json(const std::vector<MemoryRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MemoryRow& r : rows) {
    const MemoryEstimate& e = r.estimate;
    out.push_back({{"mode", r.mode},
                   {"batch", r.batch},
                   {"device", r.device == MemoryDevice::Cpu ? "cpu" : "cuda"},
                   {"recompute", r.recompute},
                   {"weights", whole(e.weights)},
                   {"gradients", whole(e.gradients)},
                   {"optimizer", whole(e.optimizer)},
                   {"activations", whole(e.activations)},
                   {"baseline", whole(e.baseline)},
                   {"peak", whole(e.total())}});
  }
  return out;
}

void print_memory(const std::vector<MemoryRow>& rows) {
  std::printf(
      "memory       estimated peaks (CPU: resident set, ~%s of it the process; CUDA: allocator peak):\n",
      format_bytes(rows.front().estimate.baseline).c_str());
  std::printf("               %-31s %10s %10s %10s %12s %10s\n", "", "weights", "gradients", "AdamW",
              "activations", "peak");
  for (const MemoryRow& r : rows) {
    const MemoryEstimate& e = r.estimate;
    char what[64];
    std::snprintf(what, sizeof what, "%s batch %lld %s%s",
                  r.mode == std::string("infer") ? "predict" : "train", (long long)r.batch,
                  memory_device_name(r.device), r.recompute ? " --recompute" : "");
    auto cell = [](double bytes) { return bytes > 0 ? format_bytes(bytes) : std::string("-"); };
    std::printf("               %-31s %10s %10s %10s %12s %10s\n", what, cell(e.weights).c_str(),
                cell(e.gradients).c_str(), cell(e.optimizer).c_str(), cell(e.activations).c_str(),
                format_bytes(e.total()).c_str());
  }
}

int list() {
  int width = 0;  // the longest name sets the column
  for (const auto& c : attention_choices()) width = std::max(width, int(c.name.size()));
  for (const auto& c : attention_choices())
    std::printf("  %-*s %s\n", width, c.name.c_str(), c.description.c_str());
  return 0;
}

// Counting the work builds the N x N table of pairs: beyond this many tokens it is left out.
constexpr int64_t kCountedTokens = 2048;

// The offsets the layout gives attention, as `model info` prints them.
std::string layout_offsets(const ViTConfig& c) {
  const long long H = c.grid_height(), W = c.grid_width(), L = H * W;
  char text[200];
  if (c.layout == "sequence")
    std::snprintf(text, sizeof text, "1-D: the %lld patches row by row, offsets -%lld..%lld (%lld), and CLS",
                  L, L - 1, L - 1, 2 * L - 1);
  else if (c.layout == "causal-sequence")
    std::snprintf(text, sizeof text,
                  "causal 1-D: patch i sees patches j <= i, offsets 0..%lld (%lld); CLS reads all", L - 1, L);
  else
    std::snprintf(text, sizeof text, "2-D: offsets (dy, dx) in [-%lld, %lld] x [-%lld, %lld] (%lld), and CLS",
                  H - 1, H - 1, W - 1, W - 1, (2 * H - 1) * (2 * W - 1));
  return text;
}

// The offset-batched layout of a block's pairs (cpu/offset_buckets.h): buckets and padding.
void print_offset_buckets(const ViTConfig& config) {
  const AttentionSpec spec = config.attention_spec(config.depth - 1);
  const PairOrder order = make_pair_order(make_relative_table(config.token_layout(), spec.encoding));
  const OffsetBuckets plan = plan_offset_buckets(order.entry_offset);
  std::printf(
      "             offset-batched: %zu buckets, %.2fx the pairs' rows padded (%.2fx in one bucket)\n",
      plan.buckets.size(), plan.padding(), single_bucket_padding(order.entry_offset));
}

void print_json(const ViTConfig& config, int64_t params, bool counted, const ModelCost& cost,
                const std::vector<MemoryRow>& rows) {
  // The work's fields are null where it was not counted.
  auto macs = [counted](double v) { return counted ? whole(v) : nlohmann::ordered_json(nullptr); };
  const nlohmann::ordered_json out = {{"model", config.model},
                                      {"preset", config.preset},
                                      {"image", {config.image_height, config.image_width}},
                                      {"patch", config.patch},
                                      {"layout", config.layout},
                                      {"offsets", layout_offsets(config)},
                                      {"tokens", config.tokens()},
                                      {"parameters", params},
                                      {"relative_entries", cost.relative_entries},
                                      {"exact_macs_per_image", macs(cost.exact_macs)},
                                      {"cls_only_macs_per_image", macs(cost.cls_only_macs)},
                                      {"cls_only_batch_macs_per_image", macs(cost.cls_only_batch_macs)},
                                      {"weight_bytes", whole(rows.front().estimate.weights)},
                                      {"memory", memory_json(rows)}};
  std::cout << json_line(out) << std::endl;
}

int info(const ModelOptions& options, int64_t batch, bool json) {
  const ViTConfig config = options.config();
  const int64_t params = parameter_count(config);
  const bool counted = config.tokens() <= kCountedTokens;
  ModelCost cost;
  if (counted)
    cost = model_cost(EngineOptions{}, config);  // the work of the engine's defaults
  else if (config.attention_spec(config.depth - 1).relative())
    cost.relative_entries = relative_entries(config, config.attention_spec(config.depth - 1).encoding);
  const std::vector<MemoryRow> rows = memory_rows(config, batch);
  if (json) {
    print_json(config, params, counted, cost, rows);
    return 0;
  }
  std::printf("model        %s: %s\n", config.model.c_str(),
              attention_choice(config.model).description.c_str());
  if (config.first_blocks > 0)
    std::printf("hybrid       first %lld blocks: %s\n", (long long)config.first_blocks,
                config.first_model.c_str());
  std::printf("architecture ViT-%s: depth %lld, dim %lld, %lld heads x %lld, MLP %lld%s\n",
              config.preset.c_str(), (long long)config.depth, (long long)config.dim, (long long)config.heads,
              (long long)config.head_dim, (long long)config.mlp_dim,
              config.position_embedding ? ", learned absolute position embedding" : "");
  std::printf("input        %lldx%lld, %lld channel(s), patch %lld -> %lldx%lld tokens + CLS = %lld\n",
              (long long)config.image_height, (long long)config.image_width, (long long)config.channels,
              (long long)config.patch, (long long)config.grid_height(), (long long)config.grid_width(),
              (long long)config.tokens());
  std::printf("layout       %s\n", layout_offsets(config).c_str());
  if (cost.relative_entries > 0) {
    std::printf("relative     %lld matrices per relative projection per layer\n",
                (long long)cost.relative_entries);
    if (counted) print_offset_buckets(config);
  }
  if (const AttentionSpec lor = config.attention_spec(0);
      lor.method == AttentionMethod::LoRTranslution ||
      config.attention_spec(config.depth - 1).method == AttentionMethod::LoRTranslution)
    std::printf("low rank     C1 %lld in, C2 %lld out, %s%s\n", (long long)config.lor_c1,
                (long long)config.lor_c2,
                config.lor_shared ? "with the shared self-attention terms" : "without shared terms",
                config.lor_value_slices ? ", values sliced per head (as the public code)" : "");
  std::printf("parameters   %lld (%.1f M), %.1f MB as float32\n", (long long)params, params / 1e6,
              double(params) * 4 / 1e6);
  print_memory(rows);
  if (!counted) {
    std::printf("work         not counted: %lld tokens (more than %lld; the pairs alone are %.3g)\n",
                (long long)config.tokens(), (long long)kCountedTokens,
                double(config.tokens()) * double(config.tokens()));
    return 0;
  }
  std::printf(
      "work         %.1f M multiply-adds per image (exact, forward, every token through every block);\n"
      "             %.1f M with the last block for the CLS query alone, as a plain forward runs it",
      cost.exact_macs / 1e6, cost.cls_only_macs / 1e6);
  if (cost.cls_only_batch_macs !=
      cost.cls_only_macs)  // self-attention's and LoR's CLS query in a batch (nn/self_attention.h)
    std::printf(";\n             %.1f M in a batch, the CLS query meeting the unprojected inputs",
                cost.cls_only_batch_macs / 1e6);
  std::printf("\n");
  return 0;
}

}  // namespace

void add_model_command(CLI::App& root, Runners& runners) {
  CLI::App* model = root.add_subcommand("model", "the attention operators and what a model costs");
  CLI::App* list_app = model->add_subcommand("list", "the attention operators");
  runners[list_app] = [] { return list(); };
  CLI::App* info_app = model->add_subcommand(
      "info", "parameters, tokens, work and estimated peak memory of a model, from its config alone");
  struct Options {
    ModelOptions model;
    int64_t batch = 32;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  add_model_options(*info_app, o->model, true);
  info_app->add_option("--batch", o->batch, "training batch of the memory estimate")
      ->check(at_least("--batch", 1))
      ->capture_default_str();
  info_app->add_flag("--json", o->json, "print one JSON object");
  runners[info_app] = [o] { return info(o->model, o->batch, o->json); };
}

}  // namespace translution::cli
