#include "train/shift_metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <ATen/ATen.h>

#include "data/canvas_dataset.h"
#include "infer/inference_batches.h"
#include "nn/eval_mode.h"
#include "train/translation_sweep.h"
#include "util/error.h"

namespace translution {
namespace {

constexpr int64_t kBatchImages = 128;  // canvases per forward pass, at most

void check_digits(const MnistDigits& test, int64_t count, const char* what) {
  if (count < 1 || count > test.size())
    throw Error(std::string(what) + " digits must be between 1 and " + std::to_string(test.size()) +
                ", got " + std::to_string(count));
}

// Canvases [n, 1, S, S]: test digit index[k] placed at where[k].
at::Tensor place_digits(const MnistDigits& test, const std::vector<int64_t>& index,
                        const std::vector<Placement>& where, int64_t canvas) {
  at::Tensor out = at::empty({int64_t(index.size()), 1, canvas, canvas}, at::kFloat);
  for (size_t k = 0; k < index.size(); ++k)
    out[int64_t(k)][0].copy_(compose_canvas(test.images[index[k]], canvas, where[k]));
  return out;
}

// Canvases [2n, 1, S, S] for pairs [first, first + n): rows [0, n) hold test digits first.. at the
// pairs' first positions, rows [n, 2n) the same digits moved by the pairs' steps.
at::Tensor pair_canvases(const MnistDigits& test, const std::vector<ShiftPair>& pairs, int64_t first,
                         int64_t n, int64_t canvas) {
  std::vector<int64_t> index;
  std::vector<Placement> where;
  for (int64_t copy = 0; copy < 2; ++copy)
    for (int64_t k = first; k < first + n; ++k) {
      const ShiftPair& p = pairs[size_t(k)];
      index.push_back(k);
      where.push_back({p.x0 + copy * p.dx, p.y0 + copy * p.dy});
    }
  return place_digits(test, index, where, canvas);
}

// The share of the first pairs.size() test digits whose two copies get the same class, and of
// copies read right.
ShiftConsistency pair_consistency(const CanvasClassifier& classify, const MnistDigits& test, int64_t canvas,
                                  const std::vector<ShiftPair>& pairs, int64_t shift,
                                  const ShiftProgress& progress) {
  const int64_t count = int64_t(pairs.size());
  int64_t same = 0, right = 0;
  for (int64_t first = 0; first < count; first += kBatchImages / 2) {
    const int64_t n = std::min(kBatchImages / 2, count - first);
    const at::Tensor predicted = classify(pair_canvases(test, pairs, first, n, canvas)).argmax(1);  // [2n]
    const at::Tensor a = predicted.narrow(0, 0, n), b = predicted.narrow(0, n, n);
    const at::Tensor truth = test.labels.narrow(0, first, n);
    same += a.eq(b).sum().item<int64_t>();
    right += a.eq(truth).sum().item<int64_t>() + b.eq(truth).sum().item<int64_t>();
    if (progress) progress(2 * (first + n), 2 * count);
  }
  return {shift, count, double(same) / double(count), double(right) / double(2 * count)};
}

}  // namespace

CanvasClassifier classifier_of(const EngineOptions& engine, ViT model, const c10::Device& device) {
  return [engine, model, device](const at::Tensor& canvases) {
    const EvalMode evaluating(*model.ptr());
    return logits_without_gradients(engine, model, normalize_pixels(canvases), device);
  };
}

std::vector<ShiftPair> shift_pairs(int64_t count, int64_t canvas, int64_t digit, int64_t shift,
                                   uint64_t seed) {
  if (shift < 1 || canvas - digit < shift)
    throw Error("a shift of " + std::to_string(shift) + " px does not fit a " + std::to_string(digit) +
                " px digit on a " + std::to_string(canvas) + " px canvas (at most " +
                std::to_string(canvas - digit) + ")");
  std::mt19937_64 random(seed);
  const int64_t last = canvas - digit;  // the largest top-left coordinate
  const int64_t steps[4][2] = {{shift, 0}, {-shift, 0}, {0, shift}, {0, -shift}};
  std::vector<ShiftPair> pairs(size_t(std::max<int64_t>(count, 0)));
  for (ShiftPair& p : pairs) {
    const auto& step = steps[std::uniform_int_distribution<int>(0, 3)(random)];
    p.dx = step[0];
    p.dy = step[1];
    // Both copies on the canvas: x0 and x0 + dx in [0, last].
    p.x0 = std::uniform_int_distribution<int64_t>(std::max<int64_t>(0, -p.dx),
                                                  last - std::max<int64_t>(0, p.dx))(random);
    p.y0 = std::uniform_int_distribution<int64_t>(std::max<int64_t>(0, -p.dy),
                                                  last - std::max<int64_t>(0, p.dy))(random);
  }
  return pairs;
}

std::vector<ShiftPair> random_pairs(int64_t count, int64_t canvas, int64_t digit, uint64_t seed) {
  if (canvas < digit)
    throw Error("a " + std::to_string(digit) + " px digit does not fit a " + std::to_string(canvas) +
                " px canvas");
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int64_t> corner(0, canvas - digit);
  std::vector<ShiftPair> pairs(size_t(std::max<int64_t>(count, 0)));
  for (ShiftPair& p : pairs) {
    p.x0 = corner(random);
    p.y0 = corner(random);
    p.dx = corner(random) - p.x0;
    p.dy = corner(random) - p.y0;
  }
  return pairs;
}

ShiftConsistency random_pair_consistency(const CanvasClassifier& classify, const MnistDigits& test,
                                         int64_t canvas, int64_t count, uint64_t seed,
                                         const ShiftProgress& progress) {
  check_digits(test, count, "consistency");
  return pair_consistency(classify, test, canvas, random_pairs(count, canvas, test.images.size(1), seed), 0,
                          progress);
}

ShiftConsistency shift_consistency(const CanvasClassifier& classify, const MnistDigits& test, int64_t canvas,
                                   int64_t count, int64_t shift, uint64_t seed,
                                   const ShiftProgress& progress) {
  check_digits(test, count, "consistency");
  return pair_consistency(classify, test, canvas,
                          shift_pairs(count, canvas, test.images.size(1), shift, seed), shift, progress);
}

WorstCaseAccuracy worst_case_accuracy(const CanvasClassifier& classify, const MnistDigits& test,
                                      int64_t canvas, int64_t count, int64_t stride,
                                      const ShiftProgress& progress) {
  check_digits(test, count, "worst-case");
  const std::vector<int64_t> positions = sweep_positions(canvas, test.images.size(1), stride);
  const int64_t P = int64_t(positions.size());
  at::Tensor always = at::ones({count}, at::kBool);
  double right = 0, probability = 0;
  for (int64_t cell = 0; cell < P * P; ++cell) {  // row-major: y, then x
    const Placement where{positions[size_t(cell % P)], positions[size_t(cell / P)]};
    for (int64_t first = 0; first < count; first += kBatchImages) {
      const int64_t n = std::min(kBatchImages, count - first);
      std::vector<int64_t> index(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) index[size_t(k)] = first + k;
      const at::Tensor probs =
          classify(place_digits(test, index, std::vector<Placement>(size_t(n), where), canvas))
              .to(at::kDouble)
              .softmax(1);  // [n, classes]
      const at::Tensor truth = test.labels.narrow(0, first, n);
      const at::Tensor correct = probs.argmax(1).eq(truth);
      always.narrow(0, first, n).logical_and_(correct);
      right += double(correct.sum().item<int64_t>());
      probability += probs.gather(1, truth.unsqueeze(1)).sum().item<double>();
    }
    if (progress) progress((cell + 1) * count, P * P * count);
  }
  const double images = double(P * P * count);
  return {count,          stride,
          P * P,          double(always.sum().item<int64_t>()) / double(count),
          right / images, probability / images};
}

namespace {

// Sums of squares for one layer over a batch of pairs: |T F(x) - F(T x)|^2 and |F(T x)|^2,
// image tokens (interior of both grids) and CLS apart. `tokens`: [2n, 1 + H W, C], rows [0, n) the
// first copies, [n, 2n) the shifted ones; `pairs` in grid steps.
struct SquaredSums {
  double token_error = 0, token_norm = 0, cls_error = 0, cls_norm = 0;
};

SquaredSums layer_sums(const at::Tensor& tokens, const std::vector<ShiftPair>& pairs, int64_t H, int64_t W,
                       int64_t border) {
  const int64_t n = int64_t(pairs.size()), C = tokens.size(2);
  const at::Tensor t = tokens.to(at::kCPU, at::kDouble);
  const at::Tensor grid = t.narrow(1, 1, H * W).reshape({2 * n, H, W, C});
  SquaredSums s;
  for (int64_t k = 0; k < n; ++k) {
    const ShiftPair& p = pairs[size_t(k)];  // dx, dy in patches
    // Rows r of x's grid with r and r + dy both in [border, H - 1 - border]; columns alike.
    const int64_t r0 = std::max(border, border - p.dy), r1 = std::min(H - 1 - border, H - 1 - border - p.dy);
    const int64_t c0 = std::max(border, border - p.dx), c1 = std::min(W - 1 - border, W - 1 - border - p.dx);
    const at::Tensor moved = grid[k].narrow(0, r0, r1 - r0 + 1).narrow(1, c0, c1 - c0 + 1);  // T F(x)
    const at::Tensor direct =
        grid[n + k].narrow(0, r0 + p.dy, r1 - r0 + 1).narrow(1, c0 + p.dx, c1 - c0 + 1);  // F(T x)
    s.token_error += (moved - direct).pow(2).sum().item<double>();
    s.token_norm += direct.pow(2).sum().item<double>();
    s.cls_error += (t[k][0] - t[n + k][0]).pow(2).sum().item<double>();
    s.cls_norm += t[n + k][0].pow(2).sum().item<double>();
  }
  return s;
}

}  // namespace

std::vector<LayerEquivariance> token_equivariance(const EngineOptions& engine, ViT model,
                                                  const MnistDigits& test, const EquivarianceOptions& o,
                                                  const c10::Device& device) {
  const ViTConfig& c = model->config();
  check_digits(test, o.digits, "equivariance");
  const int64_t H = c.grid_height(), W = c.grid_width();
  if (o.border < 0 || H - 2 * o.border < 2 || W - 2 * o.border < 2)
    throw Error("equivariance border " + std::to_string(o.border) + " leaves no token of a " +
                std::to_string(H) + " x " + std::to_string(W) +
                " grid that a one-patch shift keeps inside it");
  const std::vector<ShiftPair> pairs =
      shift_pairs(o.digits, c.image_width, test.images.size(1), c.patch, o.seed);
  std::vector<SquaredSums> sums(size_t(c.depth + 1));
  const EvalMode evaluating(*model);
  at::NoGradGuard no_grad;
  for (int64_t first = 0; first < o.digits; first += kBatchImages / 2) {
    const int64_t n = std::min(kBatchImages / 2, o.digits - first);
    std::vector<ShiftPair> steps;  // the batch's pairs, their steps in patches
    for (int64_t k = first; k < first + n; ++k) {
      const ShiftPair& p = pairs[size_t(k)];
      steps.push_back({p.x0, p.y0, p.dx / c.patch, p.dy / c.patch});
    }
    ViTInspection inspection;
    model->forward(engine, normalize_pixels(pair_canvases(test, pairs, first, n, c.image_width)).to(device),
                   &inspection);
    for (size_t l = 0; l < sums.size(); ++l) {
      const SquaredSums s = layer_sums(inspection.tokens[l], steps, H, W, o.border);
      sums[l].token_error += s.token_error;
      sums[l].token_norm += s.token_norm;
      sums[l].cls_error += s.cls_error;
      sums[l].cls_norm += s.cls_norm;
    }
  }
  std::vector<LayerEquivariance> out;
  for (size_t l = 0; l < sums.size(); ++l)
    out.push_back({l == 0 ? std::string("embedding") : "block " + std::to_string(l),
                   std::sqrt(sums[l].token_error / sums[l].token_norm),
                   std::sqrt(sums[l].cls_error / sums[l].cls_norm)});
  return out;
}

ShiftMetrics shift_metrics(const EngineOptions& engine, ViT model, const MnistDigits& test,
                           const ShiftMetricsOptions& o, const c10::Device& device,
                           const ShiftProgress& progress) {
  const ViTConfig& c = model->config();
  if (c.image_height != c.image_width || c.channels != 1)
    throw Error("shift metrics need a model of square one-channel images");
  const int64_t canvas = c.image_width;
  const int64_t P = int64_t(sweep_positions(canvas, test.images.size(1), o.stride).size());
  const int64_t consistency = 2 * o.consistency_digits, total = 3 * consistency + P * P * o.worst_case_digits;
  auto part = [&](int64_t before) {
    return [&progress, before, total](int64_t done, int64_t) {
      if (progress) progress(before + done, total);
    };
  };
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const CanvasClassifier classify = classifier_of(engine, model, device);
  ShiftMetrics m;
  Clock::time_point start = Clock::now();
  m.random = random_pair_consistency(classify, test, canvas, o.consistency_digits, o.seed, part(0));
  m.one_pixel = shift_consistency(classify, test, canvas, o.consistency_digits, 1, o.seed, part(consistency));
  m.whole_patch =
      shift_consistency(classify, test, canvas, o.consistency_digits, c.patch, o.seed, part(2 * consistency));
  m.consistency_seconds = seconds_since(start);
  start = Clock::now();
  m.worst_case =
      worst_case_accuracy(classify, test, canvas, o.worst_case_digits, o.stride, part(3 * consistency));
  m.worst_case_seconds = seconds_since(start);
  start = Clock::now();
  m.equivariance = token_equivariance(engine, model, test, o.equivariance, device);
  m.equivariance_seconds = seconds_since(start);
  return m;
}

}  // namespace translution
