#pragma once
// AdamW's update as device arithmetic alone, taken or skipped by a flag on the
// device: a step that a CUDA graph can hold and that never waits for the device.
//
// LibTorch's AdamW reads its learning rate and bias corrections on the host, so a
// captured step would replay the first step's numbers forever, and skipping a bad
// step means deciding on the host. Here the host writes each step's coefficients
// into a small device table before the step (set_lr), and the step picks the
// table's row by the flag: the "apply" row is AdamW's,
//   p *= 1 - lr wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p += (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),
// and the "skip" row (1, 1, 1, 0, 1) leaves p, m and v exactly as they were,
// provided the gradients were zeroed on a skipped step (train/device_step.h does).
// The step counts stay on the host, in the optimizer's own state, advanced only for
// steps that were applied (count_applied_step), so checkpoints read as they always did.
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/optim/adamw.h>

namespace translution {

class CapturableAdamW {
 public:
  // Steps `optimizer`'s parameters and state (made where missing: zero moments, step 0).
  // Every parameter with a gradient now is stepped, and its gradient tensor must stay
  // the same tensor from step to step (train/flat_gradients.h). Dense, non-amsgrad.
  explicit CapturableAdamW(torch::optim::AdamW& optimizer);

  // Writes the next step's coefficients for learning rate `lr` (a copy to the device).
  void set_lr(double lr);
  // Queues the update; `apply` is a bool scalar tensor on the parameters' device.
  void step(const at::Tensor& apply);
  // The step was applied (its flag read true on the host): the step counts advance.
  void count_applied_step();

 private:
  // Parameters that share a group's options and a step count share a table.
  struct Lists {
    const torch::optim::AdamWOptions* options;
    int64_t step;  // the steps these parameters have taken
    std::vector<at::Tensor> p, g, m, v;
    at::Tensor table;  // [2, 5] on the device: rows skip, apply; columns decay, b1, b2, -lr/bc1, sqrt(bc2)
  };
  torch::optim::AdamW& optimizer_;
  std::vector<Lists> lists_;
};

}  // namespace translution
