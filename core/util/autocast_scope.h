#pragma once
// While it lives, LibTorch's autocast runs this thread's products (mm, bmm, linear,
// matmul) on `device`'s kind of tensor in `dtype` from fp32 inputs, as PyTorch's
// `with torch.autocast(...)` does: the weights stay fp32 (the master copy the
// optimizer steps), each product reads a cast of them, cached while the scope lives.
// Which other operators autocast leaves in fp32 differs by LibTorch version and
// device; the engine does not rely on it: softmax, LayerNorm and GELU take fp32
// inputs explicitly (util/full_precision.h). Scopes nest; the outermost clears the
// cache of casts, which a step's updated weights would make stale.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace translution {

class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, c10::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool was_enabled_;
  c10::ScalarType previous_dtype_;
};

// An input of an operator that computes in one precision throughout, forward and its
// own backward (the relative products' autograd functions): under autocast on its
// device, a floating input cast to autocast's dtype, the cast recorded so that its
// gradient comes back in the input's own precision; else the input as it is.
at::Tensor autocast_input(const at::Tensor& input);

}  // namespace translution
