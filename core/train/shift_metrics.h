#pragma once
// The field's measures of shift robustness, for models that read a digit placed on a canvas:
//   * consistency (Zhang, ICML 2019; Azulay & Weiss, JMLR 2019): for each digit, one pair of
//     positions d pixels apart along a random axis direction, the first drawn uniformly among
//     those where both copies stay on the canvas; the share of digits whose two copies get the
//     same top-1 class. d = 1 px, and d = one patch (a whole-patch shift);
//   * worst-case accuracy over a grid of positions (Engstrom et al., ICML 2019): the share of
//     digits read correctly at every position of the grid, beside the mean accuracy and the mean
//     probability of the true class over the grid;
//   * token equivariance error per layer, for whole-patch shifts: T shifts a digit by one patch,
//     which moves every patch's pixels one place on the token grid; the error compares the
//     tokens of x moved one place with the tokens of T x, as a relative L2 over the tokens
//     present in both grids and at least `border` patches from every border, and separately for
//     the CLS token (which a shift should leave unchanged).
// Positions are the top-left corner of the 28 x 28 digit box (as the translation sweep's are).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/mnist.h"
#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

// Canvases [B, 1, S, S] in [0, 1] -> class scores [B, classes] (logits or probabilities).
using CanvasClassifier = std::function<at::Tensor(const at::Tensor& canvases)>;

// A model read as a classifier: the MNIST normalisation, then its forward without gradients
// under `engine` (copied into the classifier).
CanvasClassifier classifier_of(const EngineOptions& engine, ViT model, const c10::Device& device);

// Two placements of one digit, `shift` pixels apart.
struct ShiftPair {
  int64_t x0 = 0, y0 = 0;  // first copy's top-left corner
  int64_t dx = 0, dy = 0;  // second copy = first moved by (dx, dy); one of them is +-shift, the other 0
};

// For each of `count` digits a pair: a direction among right, left, down, up, then a first
// position uniformly among those where both copies fit on the canvas. Deterministic for `seed`.
std::vector<ShiftPair> shift_pairs(int64_t count, int64_t canvas, int64_t digit, int64_t shift,
                                   uint64_t seed);

struct ShiftConsistency {
  int64_t shift = 0, digits = 0;
  double consistency = 0;  // share of digits whose two copies get the same top-1 class
  double accuracy = 0;     // share of copies read correctly (both copies counted)
};

struct WorstCaseAccuracy {
  int64_t digits = 0, stride = 0, positions = 0;  // positions: per digit, the whole grid
  double worst_case = 0;                          // share of digits correct at every position
  double mean_accuracy = 0;                       // over digits and positions
  double true_probability = 0;  // mean softmax probability of the true class, over digits and positions
};

// One layer's equivariance error: relative L2 norms, sqrt(sum |T F(x) - F(T x)|^2 / sum |F(T x)|^2)
// over the digits (and the compared tokens).
struct LayerEquivariance {
  std::string layer;  // "embedding", then "block 1" ... "block L"
  double tokens = 0;  // image tokens present in both grids, `border` patches in from every border
  double cls = 0;     // the CLS token
};

struct EquivarianceOptions {
  int64_t digits = 100;
  int64_t border = 1;  // r: compare tokens at least r patches from every border of both grids
  uint64_t seed = 0;
};

struct ShiftMetricsOptions {
  int64_t consistency_digits = 1000;
  int64_t worst_case_digits = 100;
  int64_t stride = 4;  // pixels between the worst case's positions
  EquivarianceOptions equivariance;
  uint64_t seed = 0;
};

struct ShiftMetrics {
  ShiftConsistency one_pixel, whole_patch;
  WorstCaseAccuracy worst_case;
  std::vector<LayerEquivariance> equivariance;
  double consistency_seconds = 0, worst_case_seconds = 0, equivariance_seconds = 0;  // wall time of each part
};

// `progress(done, total)` may throw to stop the measurement; the exception propagates.
using ShiftProgress = std::function<void(int64_t done, int64_t total)>;

// The first `count` test digits, each at the positions of its pair (shift_pairs).
ShiftConsistency shift_consistency(const CanvasClassifier& classify, const MnistDigits& test, int64_t canvas,
                                   int64_t count, int64_t shift, uint64_t seed,
                                   const ShiftProgress& progress = {});

// The first `count` test digits at every position of sweep_positions(canvas, 28, stride).
WorstCaseAccuracy worst_case_accuracy(const CanvasClassifier& classify, const MnistDigits& test,
                                      int64_t canvas, int64_t count, int64_t stride,
                                      const ShiftProgress& progress = {});

// Per layer of a grid model with a CLS token, for whole-patch shifts (pairs as shift_pairs draws
// them with shift = the model's patch).
std::vector<LayerEquivariance> token_equivariance(const EngineOptions& engine, ViT model,
                                                  const MnistDigits& test, const EquivarianceOptions& options,
                                                  const c10::Device& device);

// All of the above for one model; progress counts images over the three measurements.
ShiftMetrics shift_metrics(const EngineOptions& engine, ViT model, const MnistDigits& test,
                           const ShiftMetricsOptions& options, const c10::Device& device,
                           const ShiftProgress& progress = {});

}  // namespace translution
