#include "train/translation_sweep.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <thread>

#include <ATen/ATen.h>

#include "data/canvas_dataset.h"
#include "image/heat_map.h"
#include "image/png_io.h"
#include "infer/inference_batches.h"
#include "nn/eval_mode.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {
constexpr int64_t kBatchImages = 128;  // images per forward pass, at most (and at least one position's)
}  // namespace

double SweepResult::mean_accuracy() const { return accuracy.defined() ? accuracy.mean().item<double>() : 0; }

std::vector<int64_t> sweep_positions(int64_t canvas, int64_t digit, int64_t stride) {
  if (stride < 1) throw Error("sweep stride must be at least 1, got " + std::to_string(stride));
  if (canvas < digit) throw Error("the canvas is smaller than a digit");
  std::vector<int64_t> out;
  for (int64_t p = 0; p <= canvas - digit; p += stride) out.push_back(p);
  if (out.back() != canvas - digit) out.push_back(canvas - digit);
  return out;
}

SweepResult translation_sweep(const EngineOptions& engine, ViT model, const MnistDigits& test,
                              const SweepOptions& options, const c10::Device& device,
                              const std::function<void(int64_t, int64_t)>& progress) {
  const ViTConfig& c = model->config();
  if (c.image_height != c.image_width || c.channels != 1)
    throw Error("the translation sweep needs a model of square one-channel images");
  if (options.digits < 1 || options.digits > test.size())
    throw Error("sweep digits must be between 1 and " + std::to_string(test.size()) + ", got " +
                std::to_string(options.digits));
  SweepResult r;
  r.canvas = c.image_height;
  r.digit_size = test.images.size(1);
  r.digits = options.digits;
  r.positions = sweep_positions(r.canvas, r.digit_size, options.stride);
  const int64_t P = int64_t(r.positions.size());
  r.accuracy = at::zeros({P, P}, at::kDouble);
  r.true_probability = at::zeros({P, P}, at::kDouble);
  const at::Tensor digits = test.images.narrow(0, 0, options.digits).to(at::kFloat).div(255.0);
  const at::Tensor labels = test.labels.narrow(0, 0, options.digits);  // the logits come back to the CPU
  at::NoGradGuard no_grad;
  const EvalMode evaluating(*model);
  // Positions share a forward pass up to kBatchImages images: with few digits (a coarse pass) a call
  // per position would pay the model's fixed cost per call for a handful of images.
  const int64_t per_call = std::max<int64_t>(1, kBatchImages / options.digits);
  const at::Tensor call_labels = labels.repeat({per_call});
  for (int64_t first = 0; first < P * P; first += per_call) {
    const int64_t count = std::min(per_call, P * P - first), n = count * options.digits;
    at::Tensor canvases = at::zeros({n, 1, r.canvas, r.canvas}, at::kFloat);
    for (int64_t k = 0; k < count; ++k) {
      const size_t yi = size_t((first + k) / P), xi = size_t((first + k) % P);
      canvases.narrow(0, k * options.digits, options.digits)
          .select(1, 0)
          .narrow(1, r.positions[yi], r.digit_size)
          .narrow(2, r.positions[xi], r.digit_size)
          .copy_(digits);
    }
    const at::Tensor probs = logits_without_gradients(engine, model, normalize_pixels(canvases), device)
                                 .softmax(1);  // [n, classes]
    const at::Tensor truth = call_labels.narrow(0, 0, n);
    const at::Tensor right = probs.argmax(1).eq(truth).to(at::kDouble).view({count, options.digits}).mean(1);
    const at::Tensor sure =
        probs.gather(1, truth.unsqueeze(1)).to(at::kDouble).view({count, options.digits}).mean(1);
    r.accuracy.view(-1).narrow(0, first, count).copy_(right);  // positions in row-major order: [y][x]
    r.true_probability.view(-1).narrow(0, first, count).copy_(sure);
    if (progress) progress(first + count, P * P);
  }
  return r;
}

std::vector<SweepResult> sweep_models(const std::vector<SweepModel>& models, const MnistDigits& test,
                                      const SweepOptions& options,
                                      const std::function<void(int64_t, int64_t)>& progress) {
  const size_t n = models.size();
  std::vector<SweepResult> results(n);
  std::vector<std::exception_ptr> failures(n);
  std::vector<std::atomic<int64_t>> done(n);
  auto sweep_one = [&](size_t i) {
    try {
      auto count = [&, i](int64_t d, int64_t total) {
        done[i] = d;
        int64_t sum = 0;
        for (const auto& v : done) sum += v;
        if (progress) progress(sum, total * int64_t(n));
      };
      results[i] =
          translation_sweep(models[i].engine, models[i].model, test, options, models[i].device, count);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  };
  std::vector<std::thread> others;
  for (size_t i = 1; i < n; ++i) others.emplace_back(sweep_one, i);
  if (n > 0) sweep_one(0);
  for (std::thread& t : others) t.join();
  for (const std::exception_ptr& f : failures)
    if (f) std::rethrow_exception(f);
  return results;
}

std::vector<SweepOptions> progressive_passes(const SweepOptions& requested, const SweepOptions& coarse) {
  const SweepOptions first{std::min(coarse.digits, requested.digits),
                           std::max(coarse.stride, requested.stride)};
  if (first.digits == requested.digits && first.stride == requested.stride) return {requested};
  return {first, requested};
}

std::vector<SweepResult> progressive_sweep(
    const std::vector<SweepModel>& models, const MnistDigits& test, const std::vector<SweepOptions>& passes,
    const std::function<void(size_t, const std::vector<SweepResult>&)>& shown,
    const std::function<void(size_t, int64_t, int64_t)>& progress) {
  if (passes.empty()) throw Error("a progressive sweep needs at least one pass");
  std::vector<SweepResult> results;
  for (size_t pass = 0; pass < passes.size(); ++pass) {
    results = sweep_models(models, test, passes[pass], [&](int64_t done, int64_t total) {
      if (progress) progress(pass, done, total);
    });
    if (shown) shown(pass, results);
  }
  return results;
}

namespace {

// The table straight to `path`: the callers below stage it in a temporary.
void write_sweep_csv_unstaged(const std::string& path, const SweepResult& r) {
  std::ofstream out(path);
  errno = 0;  // what a failed write leaves here names the cause (a full disk)
  out << "x,y,accuracy,true_probability\n";
  char line[96];
  for (size_t yi = 0; yi < r.positions.size(); ++yi)
    for (size_t xi = 0; xi < r.positions.size(); ++xi) {
      std::snprintf(line, sizeof line, "%lld,%lld,%.6f,%.6f\n", (long long)r.positions[xi],
                    (long long)r.positions[yi], r.accuracy[int64_t(yi)][int64_t(xi)].item<double>(),
                    r.true_probability[int64_t(yi)][int64_t(xi)].item<double>());
      out << line;
    }
  out.flush();
  if (!out) throw Error("cannot write " + path + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

// Heat map of `grid` (accuracy or probability) on [0, 1], one cell per position.
void write_sweep_png_unstaged(const std::string& path, const at::Tensor& grid) {
  const int64_t cell = std::max<int64_t>(4, 240 / std::max<int64_t>(1, grid.size(0)));
  write_png_rgb_unstaged(path, heat_map_rgb(grid, 0.0, 1.0, cell));
}

}  // namespace

void write_sweep_csv(const std::string& path, const SweepResult& r) {
  write_file_atomically(path, [&](const std::string& temp) { write_sweep_csv_unstaged(temp, r); });
}

SweepFiles sweep_files(const std::string& prefix) {
  return {prefix + ".csv", prefix + "-accuracy.png", prefix + "-probability.png"};
}

void write_sweep_files(const std::string& prefix, const SweepResult& r) {
  const SweepFiles f = sweep_files(prefix);
  write_files_atomically(
      {{f.csv, [&](const std::string& temp) { write_sweep_csv_unstaged(temp, r); }},
       {f.accuracy_png, [&](const std::string& temp) { write_sweep_png_unstaged(temp, r.accuracy); }},
       {f.probability_png,
        [&](const std::string& temp) { write_sweep_png_unstaged(temp, r.true_probability); }}});
}

}  // namespace translution
