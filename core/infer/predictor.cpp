#include "infer/predictor.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include <ATen/ATen.h>

#include "data/canvas_dataset.h"
#include "infer/graphed_forward.h"
#include "util/device.h"
#include "util/error.h"

namespace translution {
namespace {

// Device tensors as float tensors on the host, through one transfer: each copy to
// pageable host memory waits for the device, so one copy waits once.
std::vector<at::Tensor> on_host(const std::vector<at::Tensor>& on_device) {
  if (on_device.empty()) return {};
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : on_device) flat.push_back(t.reshape(-1));
  const at::Tensor host = at::cat(flat).to(at::kCPU, at::kFloat);
  std::vector<at::Tensor> out;
  int64_t start = 0;
  for (const at::Tensor& t : on_device) {
    out.push_back(host.narrow(0, start, t.numel()).view(t.sizes()));
    start += t.numel();
  }
  return out;
}

}  // namespace

Predictor::Predictor(const EngineOptions& engine, Checkpoint checkpoint, std::string source,
                     c10::Device device, bool cuda_graphs)
    : engine_(engine),
      checkpoint_(std::move(checkpoint)),
      source_(std::move(source)),
      device_(device),
      cuda_graphs_(cuda_graphs && device.is_cuda() && cuda_graphs_supported()) {
  const ViTConfig& c = checkpoint_.config;
  if (c.channels != 1)
    throw Error(source_ + ": the studio shows one-channel digits; this model has " +
                std::to_string(c.channels) + " channels");
  checkpoint_.model->to(device_);
  checkpoint_.model->eval();
  at::NoGradGuard no_grad;
  for (auto& layer : checkpoint_.model->offset_magnitudes()) {
    for (auto& m : layer) m.norms = m.norms.detach().to(at::kCPU);
    magnitudes_.push_back(std::move(layer));
  }
}

Predictor::~Predictor() = default;

at::Tensor Predictor::model_input(const at::Tensor& canvas) const {
  const ViTConfig& c = checkpoint_.config;
  if (canvas.dim() != 2) throw Error("a canvas must be a 2-D image");
  at::Tensor x = canvas.to(at::kCPU, at::kFloat).unsqueeze(0).unsqueeze(0);
  if (x.size(2) != c.image_height || x.size(3) != c.image_width)
    x = at::adaptive_avg_pool2d(x, {c.image_height, c.image_width});
  return normalize_pixels(x);
}

bool Predictor::graphed_forward(const at::Tensor& x, bool with_attention, Forward& out) const {
  const std::lock_guard<std::mutex> hold(graph_lock_);
  if (!graph_failure_.empty()) return false;
  std::unique_ptr<GraphedForward>& graph = graphs_[with_attention ? 1 : 0];
  if (!graph) {
    try {
      graph = std::make_unique<GraphedForward>(engine_, checkpoint_.model, x.to(device_), with_attention);
    } catch (const Error& e) {
      graph_failure_ = e.what();
      return false;
    }
  }
  const GraphedOutputs& o = graph->run(x);
  out.logits = o.logits.clone();  // the next replay overwrites the graph's outputs
  out.attention = on_host(o.attention);
  for (const at::Tensor& i : o.inputs) out.inputs.push_back(i.clone());
  return true;
}

int64_t Predictor::graph_kernels() const {
  const std::lock_guard<std::mutex> hold(graph_lock_);
  return graphs_[1] ? graphs_[1]->graph().kernels() : -1;
}

Predictor::Forward Predictor::forward(const at::Tensor& x, bool with_attention) const {
  Forward out;
  if (cuda_graphs_ && graphed_forward(x, with_attention, out)) return out;
  ViTInspection inspection;
  ViT model = checkpoint_.model;  // a handle: forward is not const, the weights are not changed
  out.logits = model->forward(engine_, x.to(device_), with_attention ? &inspection : nullptr);
  for (const at::Tensor& a : inspection.attention) out.attention.push_back(a.to(at::kCPU, at::kFloat));
  out.inputs = std::move(inspection.inputs);
  return out;
}

Prediction Predictor::predict(const at::Tensor& canvas, bool with_attention) const {
  const auto start = std::chrono::steady_clock::now();
  at::NoGradGuard no_grad;
  Forward f = forward(model_input(canvas), with_attention);
  const at::Tensor probs = f.logits.softmax(1).squeeze(0).to(at::kCPU, at::kDouble).contiguous();
  Prediction p;
  p.canvas = canvas;
  p.probabilities.assign(probs.data_ptr<double>(), probs.data_ptr<double>() + probs.numel());
  p.predicted = probs.argmax().item<int64_t>();
  for (const at::Tensor& a : f.attention) p.attention.push_back(a.squeeze(0));
  for (const at::Tensor& x : f.inputs) p.attention_inputs.push_back(x.squeeze(0));
  p.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return p;
}

std::vector<std::vector<OffsetMagnitudes>> Predictor::value_contributions(
    const Prediction& prediction) const {
  if (prediction.attention_inputs.size() != prediction.attention.size())
    throw Error("value contributions need a prediction made with its attention");
  at::NoGradGuard no_grad;
  ViTInspection inspection;  // batch of one, as the forward made it
  for (size_t l = 0; l < prediction.attention.size(); ++l) {
    inspection.attention.push_back(prediction.attention[l].unsqueeze(0));
    inspection.inputs.push_back(prediction.attention_inputs[l].unsqueeze(0));
  }
  return checkpoint_.model->value_contributions(inspection);
}

std::string Predictor::graph_state() const {
  if (!device_.is_cuda() || !cuda_graphs_) return "eager";
  const std::lock_guard<std::mutex> hold(graph_lock_);
  if (!graph_failure_.empty()) return "eager: " + graph_failure_;
  return graphs_[0] || graphs_[1] ? "CUDA graph" : "CUDA graph (not captured yet)";
}

std::string Predictor::description() const {
  const ViTConfig& c = checkpoint_.config;
  char buffer[200];
  std::snprintf(buffer, sizeof buffer, "%s ViT-%s/%lld, depth %lld, %.2f M parameters, %s", c.model.c_str(),
                c.preset.c_str(), (long long)c.patch, (long long)c.depth, double(parameter_count()) / 1e6,
                device_.is_cuda() ? "CUDA" : "CPU");
  return buffer;
}

}  // namespace translution
