#include "nn/self_attention.h"

#include <cmath>

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

at::Tensor SelfAttention::attend(const at::Tensor& x, int64_t queries, at::Tensor* probs) {
  const at::Tensor qkv = dense(to_qkv_, x);
  const at::Tensor& valid = on_device(valid_, x.device());
  at::Tensor out;
  if (queries == x.size(1)) {
    out = self_attention_core(qkv, shape_.heads, valid, probs);
  } else {  // a few query rows against every key: the separate per-head products
    const int64_t D = shape_.inner();
    const at::Tensor q = qkv.narrow(2, 0, D).narrow(1, 0, queries), k = qkv.narrow(2, D, D), v = qkv.narrow(2, 2 * D, D);
    const at::Tensor alpha = attention_softmax(attention_logits(q, k, shape_.heads), query_rows(valid, queries),
                                               std::sqrt(double(shape_.head_dim)));
    if (probs) *probs = alpha.detach();
    out = attend_values(alpha, v, shape_.heads);
  }
  return to_out_ ? dense(to_out_, out) : out;
}

}  // namespace translution
