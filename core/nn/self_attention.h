#pragma once
// Multi-head self-attention (Vaswani et al.): shared W^q, W^k, W^v for every token.
#include <torch/nn/modules/linear.h>

#include "nn/attention.h"

namespace translution {

class SelfAttention : public AttentionModule {
 public:
  SelfAttention(const AttentionShape& shape, const TokenLayout& layout);

 protected:
  at::Tensor attend(const at::Tensor& x, int64_t queries, at::Tensor* probs) override;

 private:
  AttentionShape shape_;
  torch::nn::Linear to_qkv_{nullptr}, to_out_{nullptr};
  at::Tensor valid_;  // causal mask, or undefined
};

// ViT leaves out the output projection when one head already spans the width.
bool needs_output_projection(const AttentionShape& shape);

}  // namespace translution
