#include "nn/self_attention.h"

#include <ATen/ATen.h>

#include "nn/attention_math.h"
#include "nn/dense.h"

namespace translution {

bool needs_output_projection(const AttentionShape& shape) {
  return !(shape.heads == 1 && shape.head_dim == shape.dim);
}

SelfAttention::SelfAttention(const AttentionShape& shape, const TokenLayout& layout) : shape_(shape) {
  to_qkv_ = register_module("to_qkv",
                            torch::nn::Linear(torch::nn::LinearOptions(shape.dim, 3 * shape.inner()).bias(false)));
  if (needs_output_projection(shape))
    to_out_ = register_module("to_out", torch::nn::Linear(shape.inner(), shape.dim));
  if (layout.causal) valid_ = make_relative_table(layout).valid;
}

at::Tensor SelfAttention::forward(const at::Tensor& x, at::Tensor* probs) {
  const at::Tensor out = self_attention_core(dense(to_qkv_, x), shape_.heads, on_device(valid_, x.device()), probs);
  return to_out_ ? dense(to_out_, out) : out;
}

}  // namespace translution
