#pragma once
// `translution eval --knockout`: offset importance (infer/offset_importance.h) of
// each checkpoint eval loaded, as a CSV and a heat map on the offset grid in a
// folder, and a summary (text or JSON).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <c10/core/Device.h>

#include "train/checkpoint.h"
#include "util/engine_options.h"

namespace translution::cli {

struct KnockoutOptions {
  bool enabled = false;
  std::string out = ".";  // folder for knockout-STEM.csv and knockout-STEM.png
  std::string replacement = "zero";
};

// --knockout, --out and --replacement on eval's command.
void add_knockout_options(CLI::App& eval, KnockoutOptions& options);

// What eval settled on for every checkpoint, besides the knockout's own options.
struct KnockoutRun {
  std::string dataset;  // empty: the one each checkpoint was trained on
  int64_t samples = 0;  // 0: kKnockoutDigits
  std::string data_dir;
  bool json = false;
  c10::Device device = c10::kCPU;
  bool bf16 = false;  // --precision bf16: the banks read as bfloat16
};

constexpr int64_t kKnockoutDigits = 500;

// Writes each checkpoint's map and prints its summary, the forwards under `engine`; the models
// are restored as loaded. Ctrl-C stops between forwards: nothing is written then, and it returns 130.
int knockout_report(const EngineOptions& engine, const std::vector<std::string>& paths,
                    std::vector<Checkpoint>& checkpoints, const KnockoutOptions& options,
                    const KnockoutRun& run);

}  // namespace translution::cli
