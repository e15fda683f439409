#pragma once
// `translution eval --shift-metrics`: consistency under 1-px and whole-patch shifts, worst-case
// accuracy over a grid of positions and the per-layer token equivariance error
// (train/shift_metrics.h), as text or one JSON object per checkpoint.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <c10/core/Device.h>

#include "train/checkpoint.h"
#include "train/shift_metrics.h"

namespace translution::cli {

// --shift-metrics and the options that size it.
void add_shift_metrics_options(CLI::App& app, bool& enabled, ShiftMetricsOptions& options);

// The models' forwards run under `engine`.
int report_shift_metrics(const EngineOptions& engine, const std::vector<std::string>& paths,
                         const std::vector<Checkpoint>& checkpoints, const ShiftMetricsOptions& options,
                         const std::string& data_dir, const c10::Device& device, bool json);

}  // namespace translution::cli
