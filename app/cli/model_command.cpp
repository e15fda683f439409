// `translution model list|info`
#include <cmath>
#include <cstdio>
#include <string>
#include <iostream>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "nn/memory_estimate.h"
#include "nn/model_cost.h"
#include "nn/model_size.h"
#include "nn/vit.h"
#include "train/memory_guard.h"
#include "util/error.h"

namespace translution::cli {
namespace {

const char* kModelUsage = R"(usage:
  translution model list
  translution model info --model NAME [--preset A|B|C|tiny] [--image 84 | --image 84x64] [--patch 12]
                         [--depth D] [--dim C] [--heads H] [--head-dim D] [--mlp-dim M]
                         [--channels 1] [--classes 10] [--lor-dim 8] [--no-lor-shared]
                         [--first-model NAME --first-blocks K] [--batch 32] [--json]

Reports, from the config alone and at once for any size, the parameter count
(checked against built models and the papers' Table 2 by the test suite) and
weight memory, tokens, relative matrices per projection and, up to 2048 tokens,
the exact multiply-adds per image. A config too large to count is an error.
It estimates the peak memory of a prediction (batch 1) and of a training step
at --batch images, with and without --recompute, on the CPU (resident set, the
process included) and on a CUDA device (the caching allocator's peak), by part:
weights, gradients, AdamW's moments, activations (docs/architecture.md, "Memory
before allocating", has the formula and its measured error). train, bench, eval,
sweep and predict refuse a run whose estimate exceeds the memory available.
)";

struct MemoryRow {
  const char* mode;
  int64_t batch;
  MemoryDevice device;
  bool recompute;
  MemoryEstimate estimate;
};

// Inference at batch 1 and training at `batch`, with and without --recompute, on both devices.
std::vector<MemoryRow> memory_rows(const ViTConfig& config, int64_t batch) {
  std::vector<MemoryRow> rows;
  for (const MemoryDevice d : {MemoryDevice::Cpu, MemoryDevice::Cuda}) {
    rows.push_back({"infer", 1, d, false, estimate_inference(config, 1, d)});
    for (const bool recompute : {false, true})
      rows.push_back({"train", batch, d, recompute, estimate_training(config, batch, recompute, d)});
  }
  return rows;
}

std::string memory_json(const std::vector<MemoryRow>& rows) {
  std::string out = "[";
  for (const MemoryRow& r : rows) {
    const MemoryEstimate& e = r.estimate;
    char row[512];
    std::snprintf(row, sizeof row,
                  "%s{\"mode\":\"%s\",\"batch\":%lld,\"device\":\"%s\",\"recompute\":%s,\"weights\":%.0f,"
                  "\"gradients\":%.0f,\"optimizer\":%.0f,\"activations\":%.0f,\"baseline\":%.0f,\"peak\":%.0f}",
                  out.size() > 1 ? "," : "", r.mode, (long long)r.batch, r.device == MemoryDevice::Cpu ? "cpu" : "cuda",
                  r.recompute ? "true" : "false", e.weights, e.gradients, e.optimizer, e.activations, e.baseline,
                  e.total());
    out += row;
  }
  return out + "]";
}

void print_memory(const std::vector<MemoryRow>& rows) {
  std::printf("memory       estimated peaks (CPU: resident set, ~%s of it the process; CUDA: allocator peak):\n",
              format_bytes(rows.front().estimate.baseline).c_str());
  std::printf("               %-31s %10s %10s %10s %12s %10s\n", "", "weights", "gradients", "AdamW", "activations",
              "peak");
  for (const MemoryRow& r : rows) {
    const MemoryEstimate& e = r.estimate;
    char what[64];
    std::snprintf(what, sizeof what, "%s batch %lld %s%s", r.mode == std::string("infer") ? "predict" : "train",
                  (long long)r.batch, memory_device_name(r.device), r.recompute ? " --recompute" : "");
    auto cell = [](double bytes) { return bytes > 0 ? format_bytes(bytes) : std::string("-"); };
    std::printf("               %-31s %10s %10s %10s %12s %10s\n", what, cell(e.weights).c_str(),
                cell(e.gradients).c_str(), cell(e.optimizer).c_str(), cell(e.activations).c_str(),
                format_bytes(e.total()).c_str());
  }
}

int list() {
  for (const auto& c : attention_choices()) std::printf("  %-16s %s\n", c.name.c_str(), c.description.c_str());
  return 0;
}

// Counting the work builds the N x N table of pairs: beyond this many tokens it is left out.
constexpr int64_t kCountedTokens = 2048;

int info(const Args& args) {
  const ViTConfig config = config_from_args(args);
  const int64_t params = parameter_count(config);
  const bool counted = config.tokens() <= kCountedTokens;
  ModelCost cost;
  if (counted) cost = model_cost(config);
  else if (config.attention_spec(config.depth - 1).relative())
    cost.relative_entries = relative_entries(config, config.attention_spec(config.depth - 1).encoding);
  const int64_t batch = args.get_int("batch", 32);
  if (batch < 1) throw Error("--batch must be at least 1, got " + std::to_string(batch));
  const std::vector<MemoryRow> rows = memory_rows(config, batch);
  if (args.flag("json")) {
    // The work's fields are null where it was not counted.
    auto macs = [counted](double v) {
      char text[64];
      std::snprintf(text, sizeof text, "%.0f", v);
      return counted ? std::string(text) : std::string("null");
    };
    std::printf(
        "{\"model\":\"%s\",\"preset\":\"%s\",\"image\":[%lld,%lld],\"patch\":%lld,\"tokens\":%lld,"
        "\"parameters\":%lld,\"relative_entries\":%lld,\"exact_macs_per_image\":%s,\"cls_only_macs_per_image\":%s,"
        "\"cls_only_batch_macs_per_image\":%s,\"weight_bytes\":%.0f,\"memory\":%s}\n",
        config.model.c_str(), config.preset.c_str(), (long long)config.image_height, (long long)config.image_width,
        (long long)config.patch, (long long)config.tokens(), (long long)params, (long long)cost.relative_entries,
        macs(cost.exact_macs).c_str(), macs(cost.cls_only_macs).c_str(), macs(cost.cls_only_batch_macs).c_str(),
        rows.front().estimate.weights, memory_json(rows).c_str());
    return 0;
  }
  std::printf("model        %s: %s\n", config.model.c_str(), attention_choice(config.model).description.c_str());
  if (config.first_blocks > 0)
    std::printf("hybrid       first %lld blocks: %s\n", (long long)config.first_blocks, config.first_model.c_str());
  std::printf("architecture ViT-%s: depth %lld, dim %lld, %lld heads x %lld, MLP %lld%s\n", config.preset.c_str(),
              (long long)config.depth, (long long)config.dim, (long long)config.heads, (long long)config.head_dim,
              (long long)config.mlp_dim, config.position_embedding ? ", learned absolute position embedding" : "");
  std::printf("input        %lldx%lld, %lld channel(s), patch %lld -> %lldx%lld tokens + CLS = %lld\n",
              (long long)config.image_height, (long long)config.image_width, (long long)config.channels,
              (long long)config.patch, (long long)config.grid_height(), (long long)config.grid_width(),
              (long long)config.tokens());
  if (cost.relative_entries > 0)
    std::printf("relative     %lld matrices per relative projection per layer\n", (long long)cost.relative_entries);
  std::printf("parameters   %lld (%.1f M), %.1f MB as float32\n", (long long)params, params / 1e6, double(params) * 4 / 1e6);
  print_memory(rows);
  if (!counted) {
    std::printf("work         not counted: %lld tokens (more than %lld; the pairs alone are %.3g)\n",
                (long long)config.tokens(), (long long)kCountedTokens, double(config.tokens()) * double(config.tokens()));
    return 0;
  }
  std::printf("work         %.1f M multiply-adds per image (exact, forward, every token through every block);\n"
              "             %.1f M with the last block for the CLS query alone, as a plain forward runs it",
              cost.exact_macs / 1e6, cost.cls_only_macs / 1e6);
  if (cost.cls_only_batch_macs != cost.cls_only_macs)  // self-attention's and LoR's CLS query in a batch (nn/self_attention.h)
    std::printf(";\n             %.1f M in a batch, the CLS query meeting the unprojected inputs", cost.cls_only_batch_macs / 1e6);
  std::printf("\n");
  return 0;
}

}  // namespace

int model_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kModelUsage)) return *status;
  const std::string sub = words[0];
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (sub == "list") return list();
  if (sub == "info") return info(Args(rest, model_flags({"json"}), model_options({"batch"})));
  throw Error("unknown model command '" + sub + "' (expected list or info)");
}

}  // namespace translution::cli
