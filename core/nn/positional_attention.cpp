#include "nn/positional_attention.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "cpu/linear.h"
#include "nn/attention_math.h"
#include "nn/self_attention.h"
#include "util/error.h"

namespace translution {

at::Tensor PositionalAttention::gpsa_features(const RelativeTable& t) {
  const int64_t N = t.tokens();
  std::vector<double> r(size_t(N * N * 3), 0.0);  // pair i N + j at 3 (i N + j)
  for (size_t p = 0; p < t.entry_of.size(); ++p) {
    const EntryInfo& info = t.info[size_t(t.entry_of[p])];
    if (info.kind != EntryInfo::Kind::Offset) continue;
    r[3 * p] = double(info.dx);
    r[3 * p + 1] = double(info.dy);
    r[3 * p + 2] = double(info.dx * info.dx + info.dy * info.dy);
  }
  return at::tensor(r, at::kDouble).view({N, N, 3});
}

PositionalAttention::PositionalAttention(const AttentionSpec& spec, const AttentionShape& shape,
                                         const TokenLayout& layout)
    : method_(spec.method), shape_(shape), table_(make_relative_table(layout)) {
  const int64_t E = table_.entries, H = shape.heads, D = shape.inner();
  to_qkv_ =
      register_module("to_qkv", torch::nn::Linear(torch::nn::LinearOptions(shape.dim, 3 * D).bias(false)));
  if (needs_output_projection(shape)) to_out_ = register_module("to_out", torch::nn::Linear(D, shape.dim));
  entry_ = table_.entry;
  if (layout.causal) valid_ = table_.valid;
  switch (method_) {
    case AttentionMethod::RelativeKeyVector:
    case AttentionMethod::RelativeValueVector:
      rel_ = register_parameter("rel", at::randn({E, D}) * 0.02);
      break;
    case AttentionMethod::RelativeBias: rel_ = register_parameter("rel", at::randn({H, E}) * 0.02); break;
    case AttentionMethod::GatedPositional:
      // ConViT-style local start: prefer near tokens (weight -1 on the squared distance), gate at sigmoid(1).
      gpsa_w_ = register_parameter("gpsa_w", at::tensor({0.0f, 0.0f, -1.0f}).repeat({H, 1}));
      gpsa_gate_ = register_parameter("gpsa_gate", at::ones({H}));
      features_ = gpsa_features(table_);
      break;
    case AttentionMethod::Rotary: rotary_ = RotaryPositions(layout, shape.head_dim); break;
    default: throw Error("positional attention cannot build '" + spec.name() + "'");
  }
}

// M = queries rows of every [N, N] pair table below.
at::Tensor PositionalAttention::attend(const EngineOptions& engine, const at::Tensor& x, int64_t M,
                                       at::Tensor* probs) {
  const int64_t B = x.size(0), N = x.size(1), H = shape_.heads, dh = shape_.head_dim, E = table_.entries;
  const auto qkv = linear(engine, to_qkv_, x).chunk(3, -1);
  at::Tensor q = qkv[0].narrow(1, 0, M), k = qkv[1];
  if (method_ == AttentionMethod::Rotary) {
    q = rotary_.rotate(q, H);
    k = rotary_.rotate(k, H);
  }
  const at::Tensor entry = query_rows(on_device(entry_, x.device()), M);
  const at::Tensor valid = query_rows(on_device(valid_, x.device()), M);

  at::Tensor logits = attention_logits(engine, q, k, H);  // [B, H, M, N]
  if (method_ == AttentionMethod::RelativeKeyVector) {
    // q_i . r[d_ij]: every query against every offset vector, then pick each pair's.
    const at::Tensor qr = at::einsum("bnhd,ehd->bhne", {q.reshape({B, M, H, dh}), rel_.view({E, H, dh})});
    logits = logits + qr.gather(3, entry.view({1, 1, M, N}).expand({B, H, M, N}));
  }
  logits = logits / std::sqrt(double(dh));
  if (method_ == AttentionMethod::RelativeBias)
    logits = logits + rel_.index_select(1, entry.reshape({-1})).view({1, H, M, N});
  at::Tensor alpha = attention_softmax(engine, logits, valid);
  if (method_ == AttentionMethod::GatedPositional) {
    const at::Tensor scores =
        at::matmul(converted_like(features_, features_like_, x).narrow(0, 0, M), gpsa_w_.t())
            .permute({2, 0, 1});  // [H, M, N]
    const at::Tensor beta = attention_softmax(engine, scores.unsqueeze(0), valid);
    const at::Tensor gate = at::sigmoid(gpsa_gate_).view({1, H, 1, 1});
    const at::Tensor mixed = (1 - gate) * alpha + gate * beta;
    alpha = mixed / mixed.sum(-1, true);
  }
  if (probs) *probs = alpha.detach();
  at::Tensor out = attend_values(engine, alpha, qkv[2], H);
  if (method_ == AttentionMethod::RelativeValueVector) {
    // sum_j alpha_ij r[d_ij]: gather attention by offset, then one product with r.
    const at::Tensor by_offset = at::zeros({B, H, M, E}, alpha.options())
                                     .scatter_add_(3, entry.view({1, 1, M, N}).expand({B, H, M, N}), alpha);
    out = out + at::einsum("bhne,ehd->bnhd", {by_offset, rel_.view({E, H, dh})}).reshape({B, M, H * dh});
  }
  return to_out_ ? linear(engine, to_out_, out) : out;
}

}  // namespace translution
