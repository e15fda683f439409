#include "train/device_step.h"

#include <optional>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "util/autocast_scope.h"
#include "util/full_precision.h"

namespace translution {

DeviceStep::DeviceStep(const EngineOptions& engine, ViT model, torch::optim::AdamW& optimizer,
                       double clip_norm, bool autocast_bf16)
    : engine_(engine),
      model_(std::move(model)),
      clip_norm_(clip_norm),
      autocast_bf16_(autocast_bf16),
      gradients_(model_->parameters()),
      adamw_(optimizer),
      update_(at::ones({}, gradients_.buffer().options().dtype(at::kBool))) {}

void DeviceStep::set_lr(double lr, bool update) {
  adamw_.set_lr(lr);
  update_.fill_(update);
}

at::Tensor DeviceStep::run(const at::Tensor& images, const at::Tensor& labels,
                           const std::function<void(StepPart)>& entering) {
  const auto enter = [&](StepPart part) {
    if (entering) entering(part);
  };
  enter(StepPart::Forward);
  gradients_.zero();
  at::Tensor logits;  // [B, classes]
  {
    std::optional<AutocastScope> bf16;
    if (autocast_bf16_) bf16.emplace(images.device().type(), at::kBFloat16);
    logits = full_precision(model_->forward(engine_, images));
  }
  const at::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
  enter(StepPart::Backward);
  loss.backward();  // a non-finite loss gives non-finite gradients, zeroed below
  enter(StepPart::Update);
  at::NoGradGuard no_grad;
  const at::Tensor& g = gradients_.buffer();
  const at::Tensor norm = g.norm();                                                                     // []
  const at::Tensor apply = loss.detach().isfinite().logical_and(norm.isfinite()).logical_and(update_);  // []
  g.masked_fill_(apply.logical_not(), 0);
  if (clip_norm_ > 0)  // as LibTorch's clip_grad_norm_: scaled by clip / (norm + 1e-6) where that is below 1
    g.mul_((clip_norm_ / (norm + 1e-6)).clamp_max(1).masked_fill(apply.logical_not(), 1));
  adamw_.step(apply);
  const at::Tensor accuracy = logits.detach().argmax(1).eq(labels).to(loss.scalar_type()).mean();
  return at::stack({loss.detach(), accuracy, norm, apply.to(loss.scalar_type())});
}

StepReport DeviceStep::finish(const at::Tensor& report) {
  const at::Tensor host = report.to(at::kCPU, at::kDouble);
  const double* r = host.data_ptr<double>();
  StepReport out{r[0], r[1], r[2], r[3] != 0};
  if (out.applied) adamw_.count_applied_step();
  return out;
}

}  // namespace translution
