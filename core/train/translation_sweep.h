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

SweepResult translation_sweep(ViT model, const MnistDigits& test, const SweepOptions& options, const c10::Device& device,
                              const std::function<void(int64_t done, int64_t total)>& progress = {});

// CSV: x,y,accuracy,true_probability (one row per position).
void write_sweep_csv(const std::string& path, const SweepResult& result);
// Heat map of `grid` (accuracy or probability) on [0, 1], one cell per position.
void write_sweep_png(const std::string& path, const at::Tensor& grid);

}  // namespace translution
