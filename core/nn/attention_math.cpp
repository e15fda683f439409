#include "nn/attention_math.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

#include "cpu/head_attention.h"
#include "util/full_precision.h"

namespace translution {

at::Tensor attention_logits(const EngineOptions& engine, const at::Tensor& q, const at::Tensor& k,
                            int64_t heads) {
  if (at::Tensor fast = head_logits(engine, q, k, heads); fast.defined()) return fast;
  const int64_t B = q.size(0), dh = q.size(2) / heads;
  const at::Tensor qh = q.reshape({B, q.size(1), heads, dh}).transpose(1, 2);  // [B, H, M, dh]
  const at::Tensor kh = k.reshape({B, k.size(1), heads, dh}).transpose(1, 2);  // [B, H, N, dh]
  return at::matmul(qh, kh.transpose(-1, -2));                                 // [B, H, M, N]
}

at::Tensor attention_softmax(const EngineOptions& engine, const at::Tensor& logits_in,
                             const at::Tensor& valid, double divisor) {
  if (at::Tensor fast = head_softmax(engine, logits_in, valid, divisor); fast.defined()) return fast;
  const at::Tensor logits = divisor == 1.0 ? full_precision(logits_in) : full_precision(logits_in) / divisor;
  if (!valid.defined()) return at::softmax(logits, -1);
  return at::softmax(logits.masked_fill(valid.logical_not(), -std::numeric_limits<double>::infinity()), -1);
}

at::Tensor attend_values(const EngineOptions& engine, const at::Tensor& alpha, const at::Tensor& v,
                         int64_t heads) {
  if (at::Tensor fast = head_values(engine, alpha, v, heads); fast.defined()) return fast;
  const int64_t B = v.size(0), N = v.size(1), D = v.size(2), dh = D / heads;
  const at::Tensor vh = v.reshape({B, N, heads, dh}).transpose(1, 2);           // [B, H, N, dh]
  return at::matmul(alpha, vh).transpose(1, 2).reshape({B, alpha.size(2), D});  // [B, M, D]
}

at::Tensor heads_through_weight(const at::Tensor& q, const at::Tensor& w) {
  const int64_t H = q.size(-2);
  return at::einsum("...hd,hdc->...hc", {q, w.view({H, w.size(0) / H, w.size(1)})});
}

at::Tensor heads_from_weight(const at::Tensor& u, const at::Tensor& w) {
  const int64_t H = u.size(-2);
  return at::einsum("...hc,hdc->...hd", {u, w.view({H, w.size(0) / H, w.size(1)})});
}

at::Tensor self_attention_core(const EngineOptions& engine, const at::Tensor& qkv, int64_t heads,
                               const at::Tensor& valid, at::Tensor* probs) {
  if (at::Tensor fast = fused_self_attention(engine, qkv, heads, valid, probs); fast.defined()) return fast;
  const int64_t dh = qkv.size(-1) / 3 / heads;
  const auto qkv3 = qkv.chunk(3, -1);  // q, k, v: [B, N, D] each
  const at::Tensor alpha = attention_softmax(engine, attention_logits(engine, qkv3[0], qkv3[1], heads), valid,
                                             std::sqrt(double(dh)));
  if (probs) *probs = alpha.detach();
  return attend_values(engine, alpha, qkv3[2], heads);
}

}  // namespace translution
