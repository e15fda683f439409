#include "infer/attention_inspection.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

at::Tensor attention_rollout(const std::vector<at::Tensor>& attention) {
  if (attention.empty()) throw Error("attention rollout needs at least one layer");
  const int64_t n = attention.front().size(-1);
  const at::Tensor identity = at::eye(n, at::kDouble);
  at::Tensor rollout = identity;
  for (const at::Tensor& layer : attention) {
    if (layer.dim() != 3 || layer.size(1) != n || layer.size(2) != n)
      throw Error("attention rollout needs every layer as [heads, N, N] with the same N");
    const at::Tensor mixed = (layer.to(at::kDouble).mean(0) + identity) / 2;  // [N, N]
    rollout = mixed.matmul(rollout);  // this layer applied after the ones below it
  }
  return rollout;
}

at::Tensor mean_attention_distance(const at::Tensor& attention, int64_t grid_h, int64_t grid_w) {
  const int64_t tokens = grid_h * grid_w;
  if (attention.dim() != 3 || attention.size(1) != 1 + tokens || attention.size(2) != 1 + tokens)
    throw Error("mean attention distance needs [heads, 1 + H W, 1 + H W] attention");
  // Patch coordinates of the image tokens: [T, 2] (row, column).
  const at::Tensor index = at::arange(tokens, at::kLong);
  const at::Tensor position =
      at::stack({index.div(grid_w, "floor"), index.remainder(grid_w)}, 1).to(at::kDouble);
  const at::Tensor distance = (position.unsqueeze(1) - position.unsqueeze(0)).pow(2).sum(2).sqrt();  // [T, T]
  const at::Tensor image =
      attention.to(at::kDouble).narrow(1, 1, tokens).narrow(2, 1, tokens);  // [heads, T, T]
  const at::Tensor weights = image / image.sum(2, true).clamp_min(1e-12);
  return (weights * distance).sum(2).mean(1);  // [heads]
}

}  // namespace translution
