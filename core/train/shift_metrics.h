#pragma once
// The field's measures of shift robustness, for models that read a digit placed on a canvas:
//   * consistency (Zhang, ICML 2019): for each digit, two positions drawn independently and
//     uniformly among those where the digit stays on the canvas (the analogue of two random
//     crops); the share of digits whose two copies get the same top-1 class;
//   * consistency at a distance d: the two positions d pixels apart along a random axis
//     direction, the first drawn uniformly among those where both copies stay on the canvas.
//     d = 1 px, whose complement is the 1-px flip rate (Azulay & Weiss, JMLR 2019), and d = one
//     patch (a whole-patch shift);
//   * worst-case accuracy over a grid of positions (after Engstrom et al., ICML 2019, whose grid
//     also rotates): the share of digits read correctly at every position of the grid, beside the
//     mean accuracy and the mean probability of the true class over the grid;
//   * token equivariance error per layer (the feature equivariance error of stylegan3's EQ-T and
//     of Gruver et al., ICLR 2023, taken to tokens), for whole-patch shifts: T shifts a digit by one patch,
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

// Canvases [B, 1, S, S] in [0, 1] -> logits [B, classes] (the worst case takes their softmax).
using CanvasClassifier = std::function<at::Tensor(const at::Tensor& canvases)>;

// A model read as a classifier: the MNIST normalisation, then its forward in evaluation mode
// without gradients under `engine` (copied into the classifier); the model keeps its mode.
CanvasClassifier classifier_of(const EngineOptions& engine, ViT model, const c10::Device& device);

// Two placements of one digit.
struct ShiftPair {
  int64_t x0 = 0, y0 = 0;  // first copy's top-left corner
  int64_t dx = 0, dy = 0;  // second copy = first moved by (dx, dy)
};

// For each of `count` digits a pair: a direction among right, left, down, up, then a first
// position uniformly among those where both copies fit on the canvas. Deterministic for `seed`.
std::vector<ShiftPair> shift_pairs(int64_t count, int64_t canvas, int64_t digit, int64_t shift,
                                   uint64_t seed);

// For each of `count` digits two positions drawn independently and uniformly among those where
// the digit fits on the canvas. Deterministic for `seed`.
std::vector<ShiftPair> random_pairs(int64_t count, int64_t canvas, int64_t digit, uint64_t seed);

struct ShiftConsistency {
  int64_t shift = 0;  // px between the copies along one axis; 0: two random positions
  int64_t digits = 0;
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
  ShiftConsistency random, one_pixel, whole_patch;
  WorstCaseAccuracy worst_case;
  std::vector<LayerEquivariance> equivariance;
  double consistency_seconds = 0, worst_case_seconds = 0, equivariance_seconds = 0;  // wall time of each part
};

// `progress(done, total)` may throw to stop the measurement; the exception propagates.
using ShiftProgress = std::function<void(int64_t done, int64_t total)>;

// The first `count` test digits, each at the positions of its pair (random_pairs).
ShiftConsistency random_pair_consistency(const CanvasClassifier& classify, const MnistDigits& test,
                                         int64_t canvas, int64_t count, uint64_t seed,
                                         const ShiftProgress& progress = {});

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
