#include "infer/attribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include "data/canvas_dataset.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {

at::Tensor checked_canvas(const at::Tensor& canvas) {
  if (!canvas.defined() || canvas.dim() != 2 || canvas.numel() == 0)
    throw Error("attribution: the canvas must be a non-empty 2-D image, got " +
                (canvas.defined() ? std::string(c10::str(canvas.sizes())) : std::string("none")));
  return canvas.detach().to(at::kCPU, at::kFloat).contiguous();  // [H, W]
}

void require_at_least(int64_t value, int64_t min, const char* what) {
  if (value < min)
    throw Error(std::string("attribution: ") + what + " must be at least " + std::to_string(min) + ", got " +
                std::to_string(value));
}

// logits of `canvases` [B, H, W] -> [B, classes] float on the CPU, checked for shape.
at::Tensor run_logits(const LogitsFunction& logits, const at::Tensor& canvases) {
  const at::Tensor out = logits(canvases);
  if (!out.defined() || out.dim() != 2 || out.size(0) != canvases.size(0) || out.size(1) < 1)
    throw Error("attribution: the logits function must return [" + std::to_string(canvases.size(0)) +
                ", classes], got " +
                (out.defined() ? std::string(c10::str(out.sizes())) : std::string("none")));
  return out.to(at::kCPU, at::kFloat);
}

// The canvas's and the black canvas's logits in one forward, and the target resolved.
Attribution ends(const LogitsFunction& logits, const at::Tensor& x, int64_t target) {
  at::NoGradGuard no_grad;
  const at::Tensor out = run_logits(logits, at::stack({x, at::zeros_like(x)}));  // [2, classes]
  Attribution a;
  a.logits = out[0].contiguous();
  a.baseline_logits = out[1].contiguous();
  const int64_t classes = out.size(1);
  a.target = target < 0 ? a.logits.argmax().item<int64_t>() : target;
  if (a.target >= classes)
    throw Error("attribution: class " + std::to_string(target) + " is outside the model's " +
                std::to_string(classes) + " classes (0.." + std::to_string(classes - 1) + ")");
  return a;
}

// The cells of the Riemann sum over the path a x, a in [0, 1]: the first [0, kFirstCell], then
// steps - 1 cells whose ends grow by one ratio up to 1; each sampled at its midpoint in log a (the
// geometric mean of its ends; the first at a = kFirstCell / 2). The widths sum to 1, so a logit
// linear in the pixels is integrated exactly with any number of steps. Why geometric: every model
// here LayerNorms each patch's raw pixels first, which makes a patch's embedding depend on its ink
// only through a^2 var / (a^2 var + eps): along the path the logit changes almost entirely between
// a ~ 1e-4 and a ~ 0.1 and is flat after. Equal cells in a leave the steep part of that range
// without a point at 32 steps; cells equal in log a spread the points over all of it
// (docs/results.md, "Attribution").
constexpr double kFirstCell = 1e-5;

struct PathCells {
  at::Tensor points, widths;  // [steps] double: where the gradient is taken, and its weight
};

PathCells path_cells(int64_t steps) {
  if (steps == 1) return {at::full({1}, 0.5, at::kDouble), at::ones({1}, at::kDouble)};
  // ends[j], j = 0..steps: 0, then kFirstCell^(1 - (j - 1) / (steps - 1)), the last exactly 1.
  const at::Tensor j = at::arange(1, steps + 1, at::kDouble);
  const at::Tensor ends = at::cat(
      {at::zeros({1}, at::kDouble), at::exp(std::log(kFirstCell) * (1 - (j - 1) / double(steps - 1)))});
  const at::Tensor lo = ends.narrow(0, 0, steps), hi = ends.narrow(0, 1, steps);
  at::Tensor points = (lo * hi).sqrt();
  points[0] = kFirstCell / 2;
  return {points, hi - lo};
}

// Tiles of side `size` over [rows, cols], row by row: the last ones narrower where it does not divide.
struct Tile {
  int64_t y, x, h, w;
};

std::vector<Tile> tiles(int64_t rows, int64_t cols, int64_t size) {
  std::vector<Tile> out;
  for (int64_t y = 0; y < rows; y += size)
    for (int64_t x = 0; x < cols; x += size)
      out.push_back({y, x, std::min(size, rows - y), std::min(size, cols - x)});
  return out;
}

at::Tensor region(const at::Tensor& image, const Tile& t) {
  return image.narrow(-2, t.y, t.h).narrow(-1, t.x, t.w);
}

}  // namespace

double Attribution::total() const { return map.sum().item<double>(); }

double Attribution::logit() const { return logits[target].item<double>(); }

double Attribution::logit_difference() const {
  return logits[target].item<double>() - baseline_logits[target].item<double>();
}

double Attribution::completeness_gap() const {
  const double difference = logit_difference(), gap = std::abs(total() - difference);
  if (difference == 0) return gap == 0 ? 0 : std::numeric_limits<double>::infinity();
  return gap / std::abs(difference);
}

std::optional<Attribution> integrated_gradients(const LogitsFunction& logits, const at::Tensor& canvas,
                                                const IntegratedGradientsOptions& o) {
  const at::Tensor x = checked_canvas(canvas);  // [H, W]
  require_at_least(o.steps, 1, "steps");
  require_at_least(o.batch, 1, "the batch of path points");
  Attribution a = ends(logits, x, o.target);
  a.steps = o.steps;
  const PathCells path = path_cells(o.steps);
  at::Tensor gradient_sum = at::zeros(x.sizes(), at::kDouble);  // [H, W]: sum over cells of width x gradient
  const at::AutoGradMode with_grad(true);
  for (int64_t start = 0; start < o.steps; start += o.batch) {
    const int64_t n = std::min(o.batch, o.steps - start);
    const at::Tensor alphas = path.points.narrow(0, start, n).to(at::kFloat).view({n, 1, 1});
    const at::Tensor points = (alphas * x).requires_grad_(true);                      // [n, H, W]
    const at::Tensor target_logits = run_logits(logits, points).select(1, a.target);  // [n]
    at::Tensor gradient;  // [n, H, W]; undefined where the logit does not depend on the pixels
    if (target_logits.requires_grad())
      gradient =
          torch::autograd::grad({target_logits.sum()}, {points}, {}, false, false, /*allow_unused=*/true)[0];
    if (!gradient.defined()) gradient = at::zeros_like(points);
    gradient_sum += (gradient.to(at::kDouble) * path.widths.narrow(0, start, n).view({n, 1, 1})).sum(0);
    if (o.progress && !o.progress(start + n, o.steps)) return std::nullopt;
  }
  a.map =
      (x.to(at::kDouble) * gradient_sum).to(at::kFloat).contiguous();  // x - baseline is x: the baseline is 0
  return a;
}

std::optional<Attribution> occlusion(const LogitsFunction& logits, const at::Tensor& canvas,
                                     const OcclusionOptions& o) {
  const at::Tensor x = checked_canvas(canvas);  // [H, W]
  const int64_t rows = x.size(0), cols = x.size(1);
  if (o.occluder < 1 || o.occluder > std::max(rows, cols))
    throw Error("attribution: the occluder must be 1 to " + std::to_string(std::max(rows, cols)) +
                " pixels (the canvas's side), got " + std::to_string(o.occluder));
  require_at_least(o.batch, 1, "the batch of occluded copies");
  Attribution a = ends(logits, x, o.target);
  a.occluder = o.occluder;
  std::vector<Tile> inked;  // a tile without ink equals the baseline already: its value is 0
  for (const Tile& t : tiles(rows, cols, o.occluder))
    if (region(x, t).gt(0).any().item<bool>()) inked.push_back(t);
  at::Tensor map = at::zeros({rows, cols}, at::kFloat);
  const float reference = a.logit();
  at::NoGradGuard no_grad;
  const int64_t total = int64_t(inked.size());
  for (int64_t start = 0; start < total; start += o.batch) {
    const int64_t n = std::min(o.batch, total - start);
    at::Tensor copies = x.unsqueeze(0).repeat({n, 1, 1});  // [n, H, W]: copy i has tile start + i black
    for (int64_t i = 0; i < n; ++i) region(copies[i], inked[size_t(start + i)]).zero_();
    const at::Tensor drops = reference - run_logits(logits, copies).select(1, a.target);  // [n]
    for (int64_t i = 0; i < n; ++i) region(map, inked[size_t(start + i)]).fill_(drops[i].item<float>());
    if (o.progress && !o.progress(start + n, total)) return std::nullopt;
  }
  a.map = map;
  return a;
}

LogitsFunction model_logits(const EngineOptions& engine, ViT model, c10::Device device) {
  if (model->config().channels != 1)
    throw Error("attribution: canvases are one-channel; this model reads " +
                std::to_string(model->config().channels) + " channels");
  return [engine, model, device](const at::Tensor& canvases) {
    const ViTConfig& c = model->config();
    if (canvases.dim() != 3) throw Error("attribution: canvases must be [B, H, W]");
    at::Tensor images = canvases.to(at::kFloat).unsqueeze(1);  // [B, 1, H, W]
    if (images.size(2) != c.image_height || images.size(3) != c.image_width)
      images = at::adaptive_avg_pool2d(images, {c.image_height, c.image_width});
    ViT run = model;  // a handle: forward is not const, the weights are not changed
    return run->forward(engine, normalize_pixels(images).to(device))
        .to(at::kCPU, at::kFloat);  // [B, classes]
  };
}

std::optional<Attribution> integrated_gradients(const EngineOptions& engine, const ViT& model,
                                                c10::Device device, const at::Tensor& canvas,
                                                const IntegratedGradientsOptions& options) {
  return integrated_gradients(model_logits(engine, model, device), canvas, options);
}

std::optional<Attribution> occlusion(const EngineOptions& engine, const ViT& model, c10::Device device,
                                     const at::Tensor& canvas, const OcclusionOptions& options) {
  return occlusion(model_logits(engine, model, device), canvas, options);
}

void write_attribution_csv(const std::string& path, const at::Tensor& map) {
  if (map.dim() != 2)
    throw Error(path + ": an attribution map is 2-D, got " + std::string(c10::str(map.sizes())));
  const at::Tensor values = map.to(at::kCPU, at::kDouble).contiguous();
  const double* v = values.data_ptr<double>();
  write_file_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp);
    char number[32];
    for (int64_t y = 0; y < values.size(0); ++y) {
      for (int64_t x = 0; x < values.size(1); ++x) {
        std::snprintf(number, sizeof number, "%s%.9g", x ? "," : "",
                      v[y * values.size(1) + x] + 0.0);  // + 0: no "-0"
        out << number;
      }
      out << '\n';
    }
    out.flush();
    if (!out) throw Error("cannot write " + path);
  });
}

}  // namespace translution
