#pragma once
// Comparisons shared by the numerical tests.
#include <algorithm>

#include <ATen/ATen.h>

namespace translution::test_support {

// Largest absolute difference relative to the reference's largest magnitude; the
// tested tensor is compared in the reference's precision.
inline double max_relative_error(const at::Tensor& tested, const at::Tensor& reference) {
  const double scale = std::max(reference.abs().max().item<double>(), 1e-30);
  return (tested.to(reference.scalar_type()) - reference).abs().max().item<double>() / scale;
}

}  // namespace translution::test_support
