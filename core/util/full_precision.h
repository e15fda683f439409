#pragma once
// fp32 for the operators that must not run in bfloat16 or half precision: softmax
// (its exponentials and sum), LayerNorm (its mean and variance) and GELU. Under
// autocast (util/autocast_scope.h) the products hand them reduced-precision
// tensors, and LibTorch 1.13's CPU autocast leaves them there; outside autocast the
// input comes back as it is, so the plain fp32 and fp64 paths are unchanged.
#include <ATen/core/Tensor.h>

namespace translution {

inline at::Tensor full_precision(const at::Tensor& x) {
  const c10::ScalarType t = x.scalar_type();
  return t == c10::ScalarType::BFloat16 || t == c10::ScalarType::Half ? x.to(c10::ScalarType::Float) : x;
}

}  // namespace translution
