#include "train/evaluate.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "data/batches.h"
#include "nn/eval_mode.h"
#include "util/error.h"

namespace translution {

EvalResult evaluate(const EngineOptions& engine, ViT model, CanvasDataset& dataset, int64_t limit,
                    int64_t batch, const c10::Device& device, const EvalProgress& progress) {
  return evaluate_range(engine, std::move(model), dataset, 0, evaluation_size(dataset, limit), batch, device,
                        progress);
}

int64_t evaluation_size(CanvasDataset& dataset, int64_t limit) {
  return limit > 0 ? std::min<int64_t>(limit, int64_t(*dataset.size())) : int64_t(*dataset.size());
}

EvalResult evaluate_range(const EngineOptions& engine, ViT model, CanvasDataset& dataset, int64_t first,
                          int64_t last, int64_t batch, const c10::Device& device,
                          const EvalProgress& progress) {
  const int64_t total = std::max<int64_t>(0, last - first);
  const int64_t classes = model->config().classes;
  at::NoGradGuard no_grad;
  const EvalMode evaluating(*model);
  at::Tensor confusion = at::zeros({classes, classes}, at::kLong);
  double loss_sum = 0;
  for (int64_t begin = 0; begin < total; begin += batch) {
    const int64_t end = std::min(total, begin + batch);
    const Batch b = make_range_batch(dataset, first + begin, first + end, device);
    const at::Tensor logits = model->forward(engine, b.images);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, b.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    const at::Tensor cell = (b.labels * classes + logits.argmax(1)).cpu();
    confusion.view(-1).index_add_(0, cell, at::ones({cell.size(0)}, at::kLong));
    if (progress) progress(end, total);
  }
  EvalResult r;
  r.count = total;
  r.confusion = confusion;
  r.loss = total > 0 ? loss_sum / double(total) : 0;
  r.accuracy = total > 0 ? double(confusion.diagonal().sum().item<int64_t>()) / double(total) : 0;
  const at::Tensor per_class = confusion.sum(1);
  for (int64_t c = 0; c < classes; ++c) {
    const int64_t n = per_class[c].item<int64_t>();
    r.class_accuracy.push_back(n > 0 ? double(confusion[c][c].item<int64_t>()) / double(n)
                                     : std::numeric_limits<double>::quiet_NaN());
  }
  return r;
}

CanvasDataset dataset_for_model(const ViTConfig& config, const std::string& kind, Split split,
                                const std::string& data_dir, uint64_t seed) {
  if (config.image_height != config.image_width)
    throw Error("the digit datasets are square; this model reads " + std::to_string(config.image_height) +
                "x" + std::to_string(config.image_width) + " images");
  if (config.channels != 1)
    throw Error("the digit datasets have one channel; this model expects " + std::to_string(config.channels));
  CanvasSpec spec;
  if (config.classes < 10)
    throw Error("MNIST has 10 classes; this model has " + std::to_string(config.classes) + " outputs");
  spec.kind = parse_canvas_kind(kind);
  spec.canvas = config.image_height;
  spec.seed = seed;
  return CanvasDataset(load_mnist(data_dir, split), split, spec);
}

}  // namespace translution
