#pragma once
// Rotary position embedding (RoFormer), 2-D for patch grids and 1-D for
// sequences: dimension pair k of each head, (x_2k, x_2k+1), turns by the angle
// p * theta_k of its token's position p. On a grid the first half of the pairs
// turn with the column x and the second half with the row y; on a sequence all
// turn with the index. theta_k = 10000^(-k' / pairs per axis), k' the pair's
// index within its axis. The CLS token has no position and is not turned.
// Used by the rope baseline and by RoPE-Translution's queries and keys.
#include <ATen/core/Tensor.h>

#include "nn/token_layout.h"

namespace translution {

class RotaryPositions {
 public:
  RotaryPositions() = default;
  // Throws translution::Error when head_dim cannot be split into pairs (per axis).
  RotaryPositions(const TokenLayout& layout, int64_t head_dim);

  // Angles per token and dimension pair, [N, head_dim / 2] double; zero for CLS.
  static at::Tensor angles(const TokenLayout& layout, int64_t head_dim);

  // The first n tokens of x [B, n, heads * head_dim], each head's pairs turned.
  at::Tensor rotate(const at::Tensor& x, int64_t heads);

 private:
  at::Tensor cos_, sin_;            // [N, head_dim / 2] double
  at::Tensor cos_like_, sin_like_;  // in the input's dtype and on its device (converted_like)
};

}  // namespace translution
