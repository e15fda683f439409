#include "nn/offset_magnitudes.h"

#include <ATen/ATen.h>

namespace translution {

OffsetMagnitudes bank_magnitudes(const std::string& projection, const at::Tensor& effective,
                                 const RelativeTable& t) {
  at::Tensor norms = effective.pow(2).sum(at::IntArrayRef{1, 2}).sqrt().to(at::kCPU, at::kFloat);
  if (projection == "k") norms = norms.index_select(0, at::tensor(t.mirror, at::kLong));
  return {projection, norms};
}

at::Tensor value_contributions_of(const at::Tensor& effective, const RelativeTable& t, const at::Tensor& x,
                                  const at::Tensor& alpha) {
  const int64_t E = effective.size(0), N = x.size(0), H = alpha.size(0), inner = effective.size(2);
  at::NoGradGuard no_grad;
  // |x_j W_v[e]_h| for every entry, token and head: [E, N, H].
  const at::Tensor norms = at::matmul(x.detach().to(effective.options()).unsqueeze(0), effective.detach())
                               .view({E, N, H, inner / H})
                               .norm(2, -1);
  // Pair (i, j) reads entry e_ij: its norms [N, N, H], weighted by that pair's attention per head.
  const at::Tensor entry = t.entry.to(norms.device());
  const at::Tensor source = at::arange(N, entry.options()).unsqueeze(0).expand({N, N});
  const at::Tensor weighted =
      (norms.index({entry, source}) * alpha.detach().to(norms.options()).permute({1, 2, 0})).sum(2);
  return at::zeros({E}, norms.options())
      .scatter_add_(0, entry.flatten(), weighted.flatten())
      .to(at::kCPU, at::kFloat);
}

}  // namespace translution
