#pragma once
// Every parameter's gradient as a view of one flat buffer, kept for the whole run.
//
// A step that a CUDA graph can capture must find its gradients where it found
// them last time: backward then adds into these views in place (LibTorch's
// gradient accumulator adds into a gradient that is already there rather than
// replacing it), zeroing them is one operation on the buffer, and their global
// norm and their masking are one operation each instead of one per parameter.
// The host path instead frees the gradients before each step
// (train/release_gradients.h); the two are not mixed in one run.
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

class FlatGradients {
 public:
  // Points every parameter's gradient at its own span of a zeroed buffer. The
  // parameters share one dtype and device (else an Error naming the first that differs).
  explicit FlatGradients(const std::vector<at::Tensor>& parameters);

  void zero() { buffer_.zero_(); }
  // The buffer: every gradient, parameter after parameter, each in its own shape's order.
  const at::Tensor& buffer() const { return buffer_; }

 private:
  at::Tensor buffer_;
};

}  // namespace translution
