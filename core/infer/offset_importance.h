#pragma once
// How much a model leans on each offset: the accuracy and the true class's logit
// over a set of digits with the matrices of one offset knocked out (W_q, W_k and
// W_v of that offset together, in every layer; infer/offset_knockout.h), offset by
// offset over the whole grid, against the intact model.
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "infer/offset_knockout.h"
#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

struct OffsetImportance {
  TokenLayout layout;
  int64_t digits = 0;
  double baseline_accuracy = 0;  // fraction correct, intact model
  double baseline_logit = 0;     // mean logit of the true class, intact model
  std::vector<Offset> offsets;   // layout_offsets(layout) order
  // Per offset: accuracy with it knocked out, baseline minus that, and the mean
  // over digits of (intact - knocked-out) true-class logit.
  std::vector<double> accuracy, accuracy_drop, logit_drop;
  bool complete = false;  // false when stopped before the last offset (the vectors hold those done)

  // `values` (one per offset) on the offset grid: float [2H-1, 2W-1], row dy + H - 1,
  // column dx + W - 1; NaN where no offset was measured.
  at::Tensor grid(const std::vector<double>& values) const;
};

// Called after the baseline (done 0) and after each offset; returning false stops
// the work at that point (the result then says complete = false).
using ImportanceProgress = std::function<bool(int64_t done, int64_t total)>;

// images: [D, channels, H, W] normalised, on the model's device; labels: int64 [D].
// The model is knocked out and restored offset by offset (AppliedKnockout), and is
// as it was when this returns or throws. Forwards run under `engine` without gradients,
// `batch` images at a time; with `bf16_weights` they read bfloat16 copies of the banks
// (cpu/bf16_weights.h), made afresh for the intact model and for each knockout (in
// place of any copies `engine` names, which belong to the intact model alone).
OffsetImportance offset_importance(const EngineOptions& engine, ViT model, const at::Tensor& images,
                                   const at::Tensor& labels, OffsetKnockout::Replacement replacement,
                                   int64_t batch, bool bf16_weights = false,
                                   const ImportanceProgress& progress = {});

}  // namespace translution
