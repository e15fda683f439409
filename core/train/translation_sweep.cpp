#include "train/translation_sweep.h"

#include <cstdio>
#include <fstream>

#include <ATen/ATen.h>

#include "data/canvas_dataset.h"
#include "image/heat_map.h"
#include "image/png_io.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {

double SweepResult::mean_accuracy() const { return accuracy.defined() ? accuracy.mean().item<double>() : 0; }

std::vector<int64_t> sweep_positions(int64_t canvas, int64_t digit, int64_t stride) {
  if (stride < 1) throw Error("sweep stride must be at least 1, got " + std::to_string(stride));
  if (canvas < digit) throw Error("the canvas is smaller than a digit");
  std::vector<int64_t> out;
  for (int64_t p = 0; p <= canvas - digit; p += stride) out.push_back(p);
  if (out.back() != canvas - digit) out.push_back(canvas - digit);
  return out;
}

SweepResult translation_sweep(ViT model, const MnistDigits& test, const SweepOptions& options, const c10::Device& device,
                              const std::function<void(int64_t, int64_t)>& progress) {
  const ViTConfig& c = model->config();
  if (c.image_height != c.image_width || c.channels != 1)
    throw Error("the translation sweep needs a model of square one-channel images");
  if (options.digits < 1 || options.digits > test.size())
    throw Error("sweep digits must be between 1 and " + std::to_string(test.size()) + ", got " + std::to_string(options.digits));
  SweepResult r;
  r.canvas = c.image_height;
  r.digit_size = test.images.size(1);
  r.digits = options.digits;
  r.positions = sweep_positions(r.canvas, r.digit_size, options.stride);
  const int64_t P = int64_t(r.positions.size());
  r.accuracy = at::zeros({P, P}, at::kDouble);
  r.true_probability = at::zeros({P, P}, at::kDouble);
  const at::Tensor digits = test.images.narrow(0, 0, options.digits).to(at::kFloat).div(255.0);
  const at::Tensor labels = test.labels.narrow(0, 0, options.digits).to(device);
  at::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  for (int64_t yi = 0; yi < P; ++yi) {
    for (int64_t xi = 0; xi < P; ++xi) {
      at::Tensor canvases = at::zeros({options.digits, 1, r.canvas, r.canvas}, at::kFloat);
      canvases.select(1, 0).narrow(1, r.positions[size_t(yi)], r.digit_size).narrow(2, r.positions[size_t(xi)], r.digit_size).copy_(digits);
      const at::Tensor probs = model->forward(normalize_pixels(canvases).to(device)).softmax(1);
      r.accuracy[yi][xi] = probs.argmax(1).eq(labels).to(at::kDouble).mean().item<double>();
      r.true_probability[yi][xi] = probs.gather(1, labels.unsqueeze(1)).to(at::kDouble).mean().item<double>();
      if (progress) progress(yi * P + xi + 1, P * P);
    }
  }
  model->train(was_training);
  return r;
}

void write_sweep_csv(const std::string& path, const SweepResult& r) {
  write_file_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp);
    out << "x,y,accuracy,true_probability\n";
    char line[96];
    for (size_t yi = 0; yi < r.positions.size(); ++yi)
      for (size_t xi = 0; xi < r.positions.size(); ++xi) {
        std::snprintf(line, sizeof line, "%lld,%lld,%.6f,%.6f\n", (long long)r.positions[xi], (long long)r.positions[yi],
                      r.accuracy[int64_t(yi)][int64_t(xi)].item<double>(),
                      r.true_probability[int64_t(yi)][int64_t(xi)].item<double>());
        out << line;
      }
    out.flush();
    if (!out) throw Error("cannot write " + path);
  });
}

void write_sweep_png(const std::string& path, const at::Tensor& grid) {
  const int64_t cell = std::max<int64_t>(4, 240 / std::max<int64_t>(1, grid.size(0)));
  write_png_rgb(path, heat_map_rgb(grid, 0.0, 1.0, cell));
}

}  // namespace translution
