#pragma once
// Accuracy the way the papers report it: top-1 on a test set, plus per-class
// accuracy and the confusion matrix for the studio and `translution eval`.
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/canvas_dataset.h"
#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

struct EvalResult {
  int64_t count = 0;
  double loss = 0;                     // mean cross-entropy
  double accuracy = 0;                 // fraction correct
  std::vector<double> class_accuracy;  // per true class (NaN for a class with no samples)
  at::Tensor confusion;                // int64 [classes, classes]: rows true, columns predicted
};

using EvalProgress = std::function<void(int64_t done, int64_t total)>;

// The first `limit` samples of `dataset` (0: all), in order, without gradients, the forwards under `engine`.
EvalResult evaluate(const EngineOptions& engine, ViT model, CanvasDataset& dataset, int64_t limit,
                    int64_t batch, const c10::Device& device, const EvalProgress& progress = {});

// Samples [first, last) of `dataset`, in order (a rank's share of a data-parallel evaluation).
EvalResult evaluate_range(const EngineOptions& engine, ViT model, CanvasDataset& dataset, int64_t first,
                          int64_t last, int64_t batch, const c10::Device& device,
                          const EvalProgress& progress = {});
// How many samples evaluate() reads for `limit` (0: all).
int64_t evaluation_size(CanvasDataset& dataset, int64_t limit);

// The dataset a model of this config reads: canvas size follows the model's image
// size (square images only), so e.g. a 64x64 model gets a 64x64 dynamic set.
CanvasDataset dataset_for_model(const ViTConfig& config, const std::string& kind, Split split,
                                const std::string& data_dir, uint64_t seed = 0);

}  // namespace translution
