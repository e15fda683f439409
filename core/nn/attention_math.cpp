#include "nn/attention_math.h"

#include <ATen/ATen.h>

namespace translution {

at::Tensor attention_logits(const at::Tensor& q, const at::Tensor& k, int64_t heads) {
  const int64_t B = q.size(0), N = q.size(1), D = q.size(-1), dh = D / heads;
  const bool q_pair = q.dim() == 4, k_pair = k.dim() == 4;
  if (!q_pair && !k_pair) {
    const at::Tensor qh = q.view({B, N, heads, dh}).transpose(1, 2);
    const at::Tensor kh = k.view({B, N, heads, dh}).transpose(1, 2);
    return at::matmul(qh, kh.transpose(-1, -2));
  }
  // Broadcast the plain side over the missing pair index, then reduce per head.
  const at::Tensor qv = q_pair ? q.view({B, N, N, heads, dh}) : q.view({B, N, 1, heads, dh});
  const at::Tensor kv = k_pair ? k.view({B, N, N, heads, dh}) : k.view({B, 1, N, heads, dh});
  return (qv * kv).sum(-1).permute({0, 3, 1, 2});
}

at::Tensor attention_softmax(const at::Tensor& logits, const at::Tensor& valid) {
  if (!valid.defined()) return at::softmax(logits, -1);
  return at::softmax(logits.masked_fill(valid.logical_not(), -std::numeric_limits<double>::infinity()), -1);
}

at::Tensor attend_values(const at::Tensor& alpha, const at::Tensor& v, int64_t heads) {
  const int64_t B = v.size(0), N = v.size(1), D = v.size(-1), dh = D / heads;
  if (v.dim() == 3) {
    const at::Tensor vh = v.view({B, N, heads, dh}).transpose(1, 2);
    return at::matmul(alpha, vh).transpose(1, 2).reshape({B, N, D});
  }
  return at::einsum("bhij,bijhd->bihd", {alpha, v.view({B, N, N, heads, dh})}).reshape({B, N, D});
}

}  // namespace translution
