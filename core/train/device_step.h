#pragma once
// One training step queued on the model's device without waiting for it: forward,
// mean cross-entropy, backward, the gradients' global norm (and clip), the NaN
// guard and AdamW, with nothing read on the host in between. That is the step a
// GPU wants (each read of a value stalls the host until the device has caught up)
// and the only kind a CUDA graph can capture.
//
// The guard is a flag on the device: the step is applied where the loss and the
// gradients' norm are finite, and otherwise leaves the weights and AdamW's state
// exactly as they were (the gradients are zeroed and the update's coefficients
// taken from a row that changes nothing: train/capturable_adamw.h). The caller
// reads the step's report once, after the step, and so learns whether it was
// applied; a run stops there, with the last good state in memory.
//
// The gradients live in one flat buffer for the run (train/flat_gradients.h), the
// learning rate in a device table written before each step, and the relative
// operators' index tensors in caches per shape and device (cpu/offset_buckets.h,
// cpu/projection_algorithms.cpp): a warm step allocates no index and reads no value.
#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>
#include <torch/optim/adamw.h>

#include "nn/vit.h"
#include "train/capturable_adamw.h"
#include "train/flat_gradients.h"
#include "util/engine_options.h"

namespace translution {

// What a step did, read on the host from its report.
struct StepReport {
  double loss = 0;       // the batch's mean cross-entropy
  double accuracy = 0;   // the share of the batch predicted right
  double grad_norm = 0;  // the gradients' global 2-norm before clipping
  bool applied = false;  // the loss and the norm were finite, and the update was made
};

// The parts of a step, in order, for whoever watches one (perf/operator_counts.h).
enum class StepPart { Forward, Backward, Update };

class DeviceStep {
 public:
  // Steps `model` with `optimizer` (which keeps its state: checkpoints read it as
  // always), clipping the gradients' global norm to `clip_norm` where it is above
  // (0: no clip). From now on the parameters' gradients are views of one buffer.
  // With `autocast_bf16` the forward runs under autocast to bfloat16 (util/autocast_scope.h:
  // the products in bf16, fp32 weights, softmax, LayerNorm and GELU in fp32), the loss in fp32.
  DeviceStep(const EngineOptions& engine, ViT model, torch::optim::AdamW& optimizer, double clip_norm,
             bool autocast_bf16 = false);

  // The next steps' learning rate (a copy to the device; outside any captured region).
  // With `update` false they compute everything and change nothing, as a skipped step
  // does (a warm-up before capture, a measurement).
  void set_lr(double lr, bool update = true);
  // Queues one step on `images` [B, channels, H, W] and `labels` [B] (on the model's
  // device) and returns its report as a device tensor: loss, accuracy, norm, applied.
  // `entering`, where given, is called as each part begins.
  at::Tensor run(const at::Tensor& images, const at::Tensor& labels,
                 const std::function<void(StepPart)>& entering = {});
  // Reads a report on the host (the step's one wait for the device) and, where the step
  // was applied, advances the optimizer's step counts.
  StepReport finish(const at::Tensor& report);

 private:
  EngineOptions engine_;
  ViT model_;
  double clip_norm_;
  bool autocast_bf16_;
  FlatGradients gradients_;
  CapturableAdamW adamw_;
  at::Tensor update_;  // [] bool on the device: set_lr's `update`
};

}  // namespace translution
