#pragma once
// Which pixels of a canvas a class's logit rests on, measured two ways against
// the same baseline, the black canvas (every pixel 0 in canvas units, before
// the MNIST normalisation: no ink at all).
//
// Integrated Gradients (Sundararajan et al., 2017): pixel p gets
//   x_p * integral over a in [0, 1] of d logit_c(a x) / d x_p,
// the gradient taken with respect to the canvas pixels, so the normalisation is
// inside the differentiated function. The integral is a Riemann sum over
// `steps` cells of [0, 1], each cell's gradient taken at its midpoint in log a:
// the first cell is [0, 1e-5], the others grow geometrically to 1, because
// every model here LayerNorms each patch's raw pixels, so the logit moves
// almost only while a is small (attribution.cpp says more). The cells' widths
// sum to 1: a logit linear in the pixels is integrated exactly at any `steps`.
// Completeness: the map sums to logit_c(x) - logit_c(black) as the sum
// converges; the gap between the two says how far it has.
//
// Occlusion: the canvas cut into square tiles of `occluder` pixels (stride =
// size, so no overlap; the last row and column of tiles are narrower where the
// canvas is not a multiple), each tile set to the baseline in turn; the tile's
// value logit_c(x) - logit_c(x with the tile black) is given to each of its
// pixels. A tile with no ink is already the baseline: its value is 0 without a
// forward.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

// canvases [B, S, S] float in [0, 1] (ink 1) -> logits [B, classes], differentiable
// in the canvases (Integrated Gradients takes its gradient).
using LogitsFunction = std::function<at::Tensor(const at::Tensor& canvases)>;

// Called after each forward with the work done and the whole (path points, or
// tiles with ink); returning false stops the computation (the result is then empty).
using AttributionProgress = std::function<bool(int64_t done, int64_t total)>;

struct IntegratedGradientsOptions {
  int64_t target = -1;  // the class attributed; -1: the class the canvas is predicted as
  int64_t steps = 32;   // points on the path from the black canvas, at least 1
  int64_t batch = 16;   // path points per forward (the memory of one training forward of that many)
  AttributionProgress progress;
};

struct OcclusionOptions {
  int64_t target = -1;    // the class attributed; -1: the predicted class
  int64_t occluder = 12;  // the tile's side in pixels, 1 to the canvas's larger side
  int64_t batch = 64;     // occluded copies per forward
  AttributionProgress progress;
};

struct Attribution {
  at::Tensor map;              // [H, W] float on the CPU: each pixel's share of the target logit
  int64_t target = -1;         // the class attributed
  at::Tensor logits;           // [classes] float on the CPU: the canvas's logits
  at::Tensor baseline_logits;  // [classes] float on the CPU: the black canvas's logits
  int64_t steps = 0;           // Integrated Gradients' path points (0 for occlusion)
  int64_t occluder = 0;        // occlusion's tile side (0 for Integrated Gradients)

  double total() const;             // the map's sum
  double logit() const;             // logits[target]
  double logit_difference() const;  // logits[target] - baseline_logits[target]
  // |total - logit_difference| / |logit_difference|: completeness, for Integrated
  // Gradients (0 when both are 0, infinity when only the difference is).
  double completeness_gap() const;
};

// `canvas`: [H, W] in [0, 1]. Errors (translution::Error, one line) name the value at fault:
// a canvas that is not 2-D, steps or batch below 1, a target outside the logits' classes.
// std::nullopt only when `progress` asked to stop.
std::optional<Attribution> integrated_gradients(const LogitsFunction& logits, const at::Tensor& canvas,
                                                const IntegratedGradientsOptions& options);
std::optional<Attribution> occlusion(const LogitsFunction& logits, const at::Tensor& canvas,
                                     const OcclusionOptions& options);

// A one-channel model's logits for canvases as `translution predict` and the studio
// feed it: resized (area-averaged) to the model's input where the canvas differs,
// MNIST-normalised, run on `device`; logits back on the CPU as float. The forward is
// the model's own (ViT::forward) under `engine`, whose autograd is exact, so gradients reach the canvas.
LogitsFunction model_logits(const EngineOptions& engine, ViT model, c10::Device device);

std::optional<Attribution> integrated_gradients(const EngineOptions& engine, const ViT& model,
                                                c10::Device device, const at::Tensor& canvas,
                                                const IntegratedGradientsOptions& options);
std::optional<Attribution> occlusion(const EngineOptions& engine, const ViT& model, c10::Device device,
                                     const at::Tensor& canvas, const OcclusionOptions& options);

// The map as CSV: one line per canvas row, its values comma-separated; written atomically.
void write_attribution_csv(const std::string& path, const at::Tensor& map);

}  // namespace translution
