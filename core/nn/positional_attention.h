#pragma once
// The position encodings the papers compare Translution with (ICLR Table 4,
// Appendix E), each as self-attention plus one positional term:
//   rel-key    a_ij = q_i . (k_j + r[d_ij]) / sqrt(C')            (Shaw et al.)
//   rel-value  f'_i = sum_j alpha_ij (v_j + r[d_ij])               (Shaw et al.)
//   rel-bias   a_ij = q_i . k_j / sqrt(C') + b_h[d_ij]             (Swin, CoAtNet)
//   gpsa       xi = normalise((1 - s(l_h)) alpha + s(l_h) beta),  beta = softmax_j(w_h . r_ij),
//              r_ij = (dx, dy, dx^2 + dy^2)                          (ConViT)
//   rope       q_i, k_j rotated by their (x, y) before the product (2-D RoFormer)
// Offsets d_ij index the same RelativeTable as Translution (CLS pairs get their
// own entries; GPSA and RoPE treat the CLS token as having no position).
#include <torch/nn/modules/linear.h>

#include "nn/attention.h"
#include "nn/rotary.h"

namespace translution {

class PositionalAttention : public AttentionModule {
 public:
  PositionalAttention(const AttentionSpec& spec, const AttentionShape& shape, const TokenLayout& layout);

  // Positional features r_ij of GPSA, [N, N, 3] double (zero where the CLS token is involved).
  static at::Tensor gpsa_features(const RelativeTable& table);

 protected:
  at::Tensor attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                    at::Tensor* probs) override;

 private:
  AttentionMethod method_;
  AttentionShape shape_;
  RelativeTable table_;
  torch::nn::Linear to_qkv_{nullptr}, to_out_{nullptr};
  at::Tensor rel_;                 // rel-key/rel-value: [E, C']; rel-bias: [H, E]
  at::Tensor gpsa_w_, gpsa_gate_;  // [H, 3], [H]
  RotaryPositions rotary_;
  at::Tensor entry_, valid_, features_;  // constants, moved to the input's device on use
  at::Tensor features_like_;             // features_ in the input's dtype and device (converted_like)
};

}  // namespace translution
