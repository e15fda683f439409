#include "nn/self_attention.h"

#include <atomic>
#include <cmath>

#include <ATen/ATen.h>

#include "cpu/linear.h"
#include "nn/attention_math.h"
#include "util/engine_options.h"

namespace translution {

bool needs_output_projection(const AttentionShape& shape) {
  return !(shape.heads == 1 && shape.head_dim == shape.dim);
}

SelfAttention::SelfAttention(const AttentionShape& shape, const TokenLayout& layout) : shape_(shape) {
  to_qkv_ = register_module(
      "to_qkv", torch::nn::Linear(torch::nn::LinearOptions(shape.dim, 3 * shape.inner()).bias(false)));
  if (needs_output_projection(shape))
    to_out_ = register_module("to_out", torch::nn::Linear(shape.inner(), shape.dim));
  if (layout.causal) valid_ = make_relative_table(layout).valid;
}

bool reassociation_may_apply(const EngineOptions& engine, int64_t tokens, int64_t queries, int64_t images) {
  return engine.query_reassociation && images > 1 && queries < tokens;
}

namespace {
// Per image, without the output projection: q, k and v of every token and the
// per-head products, or the queries through W^k and W^v meeting the inputs.
double plain_macs(const AttentionShape& shape, double N, double M) {
  const double C = double(shape.dim), D = double(shape.inner());
  return 3 * N * C * D + 2 * M * N * D;
}
double reassociated_macs(const AttentionShape& shape, double N, double M) {
  const double C = double(shape.dim), D = double(shape.inner());
  return M * (3 * C * D + 2 * double(shape.heads) * N * C);
}
}  // namespace

bool self_attention_reassociates(const EngineOptions& engine, const AttentionShape& shape, int64_t tokens,
                                 int64_t queries, int64_t images) {
  return reassociation_may_apply(engine, tokens, queries, images) &&
         reassociated_macs(shape, double(tokens), double(queries)) <
             plain_macs(shape, double(tokens), double(queries));
}

double self_attention_macs(const EngineOptions& engine, const AttentionShape& shape, int64_t tokens,
                           int64_t queries, int64_t images) {
  const double N = double(tokens), M = double(queries);
  const double out = needs_output_projection(shape) ? M * double(shape.inner()) * double(shape.dim) : 0.0;
  return out + (self_attention_reassociates(engine, shape, tokens, queries, images)
                    ? reassociated_macs(shape, N, M)
                    : plain_macs(shape, N, M));
}

at::Tensor SelfAttention::attend_reassociated(const EngineOptions& engine, const at::Tensor& x,
                                              int64_t queries, at::Tensor* probs) {
  const int64_t B = x.size(0), H = shape_.heads, d = shape_.head_dim, D = H * d;
  const at::Tensor& w = to_qkv_->weight;  // [3D, C]: the rows of W^q, W^k, W^v
  const at::Tensor q = at::matmul(query_tokens(x, queries), w.narrow(0, 0, D).t()).view({B, queries, H, d});
  const at::Tensor keys = heads_through_weight(q, w.narrow(0, D, D));  // [B, M, H, C]
  const at::Tensor logits = at::einsum("bmhc,bnc->bhmn", {keys, x});
  const at::Tensor alpha = attention_softmax(
      engine, logits, query_rows(on_device(valid_, x.device()), queries), std::sqrt(double(d)));
  if (probs) *probs = alpha.detach();
  const at::Tensor mixed =
      at::einsum("bhmn,bnc->bmhc", {alpha, x});  // each head's weighted sum of the inputs
  return heads_from_weight(mixed, w.narrow(0, 2 * D, D)).reshape({B, queries, D});
}

at::Tensor SelfAttention::attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                                 at::Tensor* probs) {
  if (self_attention_reassociates(engine, shape_, x.size(1), queries, x.size(0))) {
    const at::Tensor out = attend_reassociated(engine, x, queries, probs);
    return to_out_ ? linear(engine, to_out_, out) : out;
  }
  const at::Tensor qkv = linear(engine, to_qkv_, x);
  const at::Tensor valid = on_device(valid_, x.device());
  at::Tensor out;
  if (queries == x.size(1)) {
    out = self_attention_core(engine, qkv, shape_.heads, valid, probs);
  } else {  // a few query rows against every key: the separate per-head products
    const int64_t D = shape_.inner();
    const at::Tensor q = qkv.narrow(2, 0, D).narrow(1, 0, queries), k = qkv.narrow(2, D, D),
                     v = qkv.narrow(2, 2 * D, D);
    const at::Tensor alpha =
        attention_softmax(engine, attention_logits(engine, q, k, shape_.heads), query_rows(valid, queries),
                          std::sqrt(double(shape_.head_dim)));
    if (probs) *probs = alpha.detach();
    out = attend_values(engine, alpha, v, shape_.heads);
  }
  return to_out_ ? linear(engine, to_out_, out) : out;
}

}  // namespace translution
