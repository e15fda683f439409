#include "nn/attention_math.h"

#include <ATen/ATen.h>

namespace translution {

at::Tensor attention_logits(const at::Tensor& q, const at::Tensor& k, int64_t heads) {
  const bool q_pair = q.dim() == 4, k_pair = k.dim() == 4;
  if (!q_pair && !k_pair) {
    const int64_t B = q.size(0), N = q.size(1), dh = q.size(2) / heads;
    const at::Tensor qh = q.view({B, N, heads, dh}).transpose(1, 2);
    const at::Tensor kh = k.view({B, N, heads, dh}).transpose(1, 2);
    return at::matmul(qh, kh.transpose(-1, -2));
  }
  const at::Tensor& pair = q_pair ? q : k;
  const int64_t N = pair.size(0), B = pair.size(2), dh = pair.size(3) / heads;
  // The plain side (q_i or k_j) broadcasts over the other token of the pair.
  const at::Tensor qv = q_pair ? q.view({N, N, B, heads, dh}) : q.transpose(0, 1).reshape({N, 1, B, heads, dh});
  const at::Tensor kv = k_pair ? k.view({N, N, B, heads, dh}) : k.transpose(0, 1).reshape({1, N, B, heads, dh});
  return (qv * kv).sum(-1).permute({2, 3, 0, 1});
}

at::Tensor attention_softmax(const at::Tensor& logits, const at::Tensor& valid) {
  if (!valid.defined()) return at::softmax(logits, -1);
  return at::softmax(logits.masked_fill(valid.logical_not(), -std::numeric_limits<double>::infinity()), -1);
}

at::Tensor attend_values(const at::Tensor& alpha, const at::Tensor& v, int64_t heads) {
  if (v.dim() == 3) {
    const int64_t B = v.size(0), N = v.size(1), D = v.size(2), dh = D / heads;
    const at::Tensor vh = v.view({B, N, heads, dh}).transpose(1, 2);
    return at::matmul(alpha, vh).transpose(1, 2).reshape({B, N, D});
  }
  // A broadcast product and a sum over j: at these sizes a batched matmul per
  // (b, i, h) is much slower on CPU (measured, docs/benchmarks.md).
  const int64_t N = v.size(0), B = v.size(2), D = v.size(3), dh = D / heads;
  const at::Tensor weights = alpha.permute({2, 3, 0, 1}).unsqueeze(-1);  // [i, j, b, h, 1]
  return (weights * v.view({N, N, B, heads, dh})).sum(1).permute({1, 0, 2, 3}).reshape({B, N, D});
}

}  // namespace translution
