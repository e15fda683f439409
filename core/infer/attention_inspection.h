#pragma once
// Reading a model's attention beyond one layer and head:
//   * rollout (Abnar & Zuidema, 2020): how much each token's last representation
//     draws on each input token, through every layer and its residual path;
//   * mean attention distance: how far, in patches, each head looks on average,
//     which tells a local (convolution-like) head from a global one.
// Tokens are laid out as CLS (0) and then the H x W patch grid in row-major order.
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

// attention: per layer, float [heads, N, N] (rows sum to 1). Each layer's heads are
// averaged and the residual added as in the paper, A' = (A + I) / 2; the product
// A'_L ... A'_1 is returned as double [N, N], rows summing to 1.
at::Tensor attention_rollout(const std::vector<at::Tensor>& attention);

// One layer's [heads, N, N] attention on an H x W grid (N = 1 + H W): for each head,
// the mean over image-token queries of sum_j a_ij |p_i - p_j|, over image-token keys
// j with the weights renormalised to exclude CLS; Euclidean distance in patches.
// Returns double [heads].
at::Tensor mean_attention_distance(const at::Tensor& attention, int64_t grid_h, int64_t grid_w);

}  // namespace translution
