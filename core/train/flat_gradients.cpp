#include "train/flat_gradients.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

FlatGradients::FlatGradients(const std::vector<at::Tensor>& parameters) {
  if (parameters.empty()) throw Error("internal: flat gradients of a model without parameters");
  int64_t total = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const at::Tensor& p = parameters[i];
    if (p.scalar_type() != parameters[0].scalar_type() || p.device() != parameters[0].device())
      throw Error("internal: parameter " + std::to_string(i) + " differs in dtype or device from the first");
    total += p.numel();
  }
  buffer_ = at::zeros({total}, parameters[0].options());
  int64_t begin = 0;
  for (const at::Tensor& p : parameters) {
    at::Tensor(p).mutable_grad() = buffer_.narrow(0, begin, p.numel()).view(p.sizes());
    begin += p.numel();
  }
}

}  // namespace translution
