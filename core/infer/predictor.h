#pragma once
// The studio's inference path, without Qt: one loaded model that turns a canvas
// into class probabilities and, when asked, every layer's attention. The UI runs
// it on a worker thread; `translution bench --mode studio` times it.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "train/checkpoint.h"
#include "util/engine_options.h"

namespace translution {

struct Prediction {
  at::Tensor canvas;                  // the input it was computed for ([S, S] in [0, 1])
  std::vector<double> probabilities;  // one per class
  int64_t predicted = -1;
  std::vector<at::Tensor> attention;  // per layer: float [heads, N, N] on the CPU (when asked)
  std::vector<at::Tensor>
      attention_inputs;     // per layer: what the attention read, [N, C] on the model's device (when asked)
  double milliseconds = 0;  // forward pass, including the copy back
};

class GraphedForward;

class Predictor {
 public:
  // On a CUDA device each kind of prediction (with and without attention) is
  // captured as a CUDA graph on first use and replayed after (infer/graphed_forward.h)
  // unless `cuda_graphs` is false; where capture fails the predictor runs eagerly
  // and graph_state() says why. Every forward runs under `engine`, kept here.
  Predictor(const EngineOptions& engine, Checkpoint checkpoint, std::string source,
            c10::Device device = c10::kCPU, bool cuda_graphs = true);
  ~Predictor();

  // canvas: [S, S] float in [0, 1] (ink 1). A canvas of another size than the
  // model's input is resized (area-averaged) first.
  Prediction predict(const at::Tensor& canvas, bool with_attention) const;

  const ViTConfig& config() const { return checkpoint_.config; }
  // The model itself, for whole-dataset work (evaluation, sweeps); forward only, under engine().
  ViT model() const { return checkpoint_.model; }
  // The options the predictions run under, for the model's other forwards too.
  const EngineOptions& engine() const { return engine_; }
  const std::map<std::string, std::string>& metadata() const { return checkpoint_.metadata; }
  const std::string& source() const { return source_; }  // file or resource it came from
  c10::Device device() const { return device_; }
  int64_t parameter_count() const { return checkpoint_.model->parameter_count(); }
  // Per layer, the relative matrices' magnitudes (empty list for plain attention layers), on the CPU.
  const std::vector<std::vector<OffsetMagnitudes>>& offset_magnitudes() const { return magnitudes_; }
  // Per layer, what each offset's value matrix carried for a prediction made with
  // attention: for every offset, the attention-weighted norms of W_v[delta] x_j
  // over the pairs at that offset (ViTImpl::value_contributions), from the
  // prediction's own attention and inputs (no second forward); an empty list for
  // a layer without offset-indexed values. On the CPU.
  std::vector<std::vector<OffsetMagnitudes>> value_contributions(const Prediction& prediction) const;
  // "translution ViT-tiny/12, 4.27 M parameters, CPU"
  std::string description() const;
  // How predictions run: "eager" (CPU, or graphs off), "CUDA graph", "CUDA graph
  // (not captured yet)" or "eager: <why the capture failed>".
  std::string graph_state() const;
  // The kernels one replay of the captured forward with attention launches (-1: none captured).
  int64_t graph_kernels() const;

 private:
  at::Tensor model_input(const at::Tensor& canvas) const;  // [1, 1, H, W], resized and normalised, on the CPU
  // The forward for `x`, through the graph where one runs: logits, and per layer
  // the attention (on the CPU) and its input (on the device), copies the caller owns.
  struct Forward {
    at::Tensor logits;
    std::vector<at::Tensor> attention, inputs;
  };
  Forward forward(const at::Tensor& x, bool with_attention) const;
  bool graphed_forward(const at::Tensor& x, bool with_attention, Forward& out) const;  // false: run eagerly

  EngineOptions engine_;
  Checkpoint checkpoint_;
  std::string source_;
  c10::Device device_;
  std::vector<std::vector<OffsetMagnitudes>> magnitudes_;
  bool cuda_graphs_;
  mutable std::mutex graph_lock_;                      // one replay at a time
  mutable std::unique_ptr<GraphedForward> graphs_[2];  // without, with attention
  mutable std::string graph_failure_;                  // why capture failed (then eager for good)
};

}  // namespace translution
