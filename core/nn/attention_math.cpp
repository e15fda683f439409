#include "nn/attention_math.h"

#include <limits>

#include <ATen/ATen.h>

namespace translution {

at::Tensor attention_logits(const at::Tensor& q, const at::Tensor& k, int64_t heads) {
  const int64_t B = q.size(0), N = q.size(1), dh = q.size(2) / heads;
  const at::Tensor qh = q.view({B, N, heads, dh}).transpose(1, 2);
  const at::Tensor kh = k.view({B, N, heads, dh}).transpose(1, 2);
  return at::matmul(qh, kh.transpose(-1, -2));
}

at::Tensor attention_softmax(const at::Tensor& logits, const at::Tensor& valid) {
  if (!valid.defined()) return at::softmax(logits, -1);
  return at::softmax(logits.masked_fill(valid.logical_not(), -std::numeric_limits<double>::infinity()), -1);
}

at::Tensor attend_values(const at::Tensor& alpha, const at::Tensor& v, int64_t heads) {
  const int64_t B = v.size(0), N = v.size(1), D = v.size(2), dh = D / heads;
  const at::Tensor vh = v.view({B, N, heads, dh}).transpose(1, 2);
  return at::matmul(alpha, vh).transpose(1, 2).reshape({B, N, D});
}

}  // namespace translution
