#pragma once
// The translation sweep: a fixed set of test digits (the first `digits` of the
// MNIST test split) placed at every position of the canvas on a grid of
// top-left corners, giving accuracy and mean true-class probability per position.
// A model that generalises across positions shows a flat map.
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/mnist.h"
#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

struct SweepOptions {
  int64_t digits = 100;  // first N test digits
  int64_t stride = 4;    // pixels between positions (the last position is always included)
};

struct SweepResult {
  int64_t canvas = 0, digit_size = 28, digits = 0;
  std::vector<int64_t> positions;  // top-left offsets, the same on both axes
  at::Tensor accuracy;             // double [P, P]: row = y position, column = x position
  at::Tensor true_probability;     // double [P, P]
  double mean_accuracy() const;
};

// Positions 0, stride, 2 stride, ... and canvas - digit.
std::vector<int64_t> sweep_positions(int64_t canvas, int64_t digit, int64_t stride);

// The model's forwards run under `engine`.
SweepResult translation_sweep(const EngineOptions& engine, ViT model, const MnistDigits& test,
                              const SweepOptions& options, const c10::Device& device,
                              const std::function<void(int64_t done, int64_t total)>& progress = {});

// One model to sweep, on its device, under the options its owner runs it with.
struct SweepModel {
  ViT model;
  c10::Device device = c10::kCPU;
  EngineOptions engine;
};

// Every model swept with `options`, one thread each (each model's products run on one thread, so the
// models share the cores this way). `progress(done, total)` counts positions over all models; it is
// called on the sweeping threads and may throw to stop the sweep, which then rethrows it.
std::vector<SweepResult> sweep_models(const std::vector<SweepModel>& models, const MnistDigits& test,
                                      const SweepOptions& options,
                                      const std::function<void(int64_t done, int64_t total)>& progress = {});

// A progressive sweep's passes: a coarse one first (at most `coarse.digits` digits, positions at least
// `coarse.stride` pixels apart: never finer than the request), then the request itself. A single pass
// when the coarse one would be the request.
std::vector<SweepOptions> progressive_passes(const SweepOptions& requested,
                                             const SweepOptions& coarse = {20, 6});

// Runs `passes` in order, every model in each pass (sweep_models), and hands each pass's results to
// `shown(pass, results)` before the next starts. Returns the last pass's results, which are what
// sweep_models(models, test, passes.back()) returns: each pass is a complete sweep of its own.
std::vector<SweepResult> progressive_sweep(
    const std::vector<SweepModel>& models, const MnistDigits& test, const std::vector<SweepOptions>& passes,
    const std::function<void(size_t pass, const std::vector<SweepResult>& results)>& shown,
    const std::function<void(size_t pass, int64_t done, int64_t total)>& progress = {});

// CSV: x,y,accuracy,true_probability (one row per position), written atomically.
void write_sweep_csv(const std::string& path, const SweepResult& result);

// What `translution sweep --out prefix` writes: the table and a heat map each of accuracy and
// of the true class's probability on [0, 1], one cell per position.
struct SweepFiles {
  std::string csv, accuracy_png, probability_png;
};
SweepFiles sweep_files(const std::string& prefix);
// The three as one set (util/atomic_file.h): a failure (a full disk) leaves every file of an
// earlier sweep as it stood.
void write_sweep_files(const std::string& prefix, const SweepResult& result);

}  // namespace translution
