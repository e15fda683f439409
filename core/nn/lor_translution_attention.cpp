#include "nn/lor_translution_attention.h"

#include <cmath>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "nn/attention_math.h"
#include "nn/dense.h"
#include "nn/fused_inference.h"
#include "nn/raw_gemm.h"
#include "nn/self_attention.h"
#include "nn/translution_attention.h"

namespace translution {
namespace {
const char* kRoles[3] = {"q", "k", "v"};

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// rel[b, i, h] = s[b, i, h] W2v[:, h], s: [B, N, H, C2 H], up: [C2 H, H dh] -> [B, N, H dh].
// Without gradients on CPU one BLAS call per head, reading s and W2v in place
// (the einsum permutes, copies and batches them: nn/fused_inference.h).
at::Tensor up_project(const at::Tensor& s, const at::Tensor& up, int64_t H, int64_t dh) {
  const int64_t B = s.size(0), N = s.size(1), c = s.size(3);
  if (!fused_inference_applies({&s, &up}) || !raw_gemm_usable(s) || !raw_gemm_usable(up))
    return at::einsum("bihc,chd->bihd", {s, up.view({c, H, dh})}).reshape({B, N, H * dh});
  at::Tensor out = at::empty({B, N, H * dh}, s.options());
  AT_DISPATCH_FLOATING_TYPES(s.scalar_type(), "up_project", [&] {
    const scalar_t *sp = s.data_ptr<scalar_t>(), *wp = up.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    for (int64_t h = 0; h < H; ++h)
      raw_gemm_strided<scalar_t>(false, false, B * N, dh, c, sp + h * c, H * c, wp + h * dh, H * dh, op + h * dh, H * dh);
  });
  return out;
}
}  // namespace

LoRTranslutionAttention::LoRTranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape,
                                                 const TokenLayout& layout)
    : spec_(spec),
      shape_(shape),
      table_(make_relative_table(layout, spec.encoding)),
      orders_(table_),
      low_in_(spec.lor_c1 * shape.heads),
      low_out_(spec.lor_c2 * shape.heads) {
  spec_.validate();
  const bool rel[3] = {spec.rel_q, spec.rel_k, spec.rel_v};
  const bool low_rank_logits = spec.rel_q || spec.rel_k;
  for (int role = 0; role < 3; ++role) {
    const std::string name = kRoles[role];
    if (spec.lor_shared) shared_[role] = register_module("to_" + name, linear(shape.dim, shape.inner()));
    if (rel[role]) {
      down_[role] = register_module(name + "_down", linear(shape.dim, low_in_));
      banks_[role] = register_parameter("w" + name, make_relative_bank(table_.entries, low_in_, low_out_));
    } else if (role < 2 && low_rank_logits) {
      // The other side of the low-rank dot product: a plain projection to C2 per head.
      down_[role] = register_module(name + "_low", linear(shape.dim, low_out_));
    }
  }
  if (spec.rel_v) {
    const double bound = 1.0 / std::sqrt(double(low_out_));
    up_v_ = register_parameter("v_up", at::empty({low_out_, shape.inner()}).uniform_(-bound, bound));
  }
  if (needs_output_projection(shape)) to_out_ = register_module("to_out", torch::nn::Linear(shape.inner(), shape.dim));
  if (layout.causal) valid_ = table_.valid;
}

at::Tensor LoRTranslutionAttention::attend(const at::Tensor& x, int64_t queries, at::Tensor* probs) {
  const int64_t H = shape_.heads, dh = shape_.head_dim;
  const PairOrder& order = orders_.get(table_, queries, x.device());
  // Every projection of x the layer needs, in one hand-off to the cores (nn/dense.h):
  // shared[r] = x W^r and low[r] = x W1^r (relative) or x W_low^r (plain side of the
  // logits); the query side's for the tokens asked for, a second hand-off when fewer.
  at::Tensor shared[3], low[3];
  auto project = [&](int first_role, int end_role, const at::Tensor& input) {
    std::vector<torch::nn::Linear*> layers;
    std::vector<at::Tensor*> targets;
    for (int role = first_role; role < end_role; ++role) {
      if (spec_.lor_shared) layers.push_back(&shared_[role]), targets.push_back(&shared[role]);
      if (down_[role]) layers.push_back(&down_[role]), targets.push_back(&low[role]);
    }
    if (layers.empty()) return;
    std::vector<at::Tensor> projected = dense_each(layers, input);
    for (size_t i = 0; i < targets.size(); ++i) *targets[i] = std::move(projected[i]);
  };
  if (queries == x.size(1)) {
    project(0, 3, x);
  } else {
    project(0, 1, query_tokens(x, queries));
    project(1, 3, x);
  }

  at::Tensor logits;
  if (spec_.lor_shared) logits = attention_logits(shared[0], shared[1], H);
  if (spec_.rel_q || spec_.rel_k) {
    const at::Tensor rel = relative_logits(order, low[0], banks_[0], low[1], banks_[1], H);
    logits = logits.defined() ? logits + rel : rel;
  }
  const at::Tensor alpha =
      attention_softmax(logits, query_rows(on_device(valid_, x.device()), queries), std::sqrt(double(dh)));
  if (probs) *probs = alpha.detach();

  at::Tensor out;
  if (spec_.lor_shared) out = attend_values(alpha, shared[2], H);
  if (spec_.rel_v) {
    // s[b, i, h] = sum_j alpha^h_ij (x_j W1v Wv[d_ij]), then W2v per head (Appendix D's order).
    const at::Tensor s = relative_values(order, alpha, low[2], banks_[2], false);  // [B, M, H, C2 H]
    const at::Tensor rel = up_project(s, up_v_, H, dh);
    out = out.defined() ? out + rel : rel;
  }
  return to_out_ ? dense(to_out_, out) : out;
}

std::vector<OffsetMagnitudes> LoRTranslutionAttention::offset_magnitudes() const {
  std::vector<OffsetMagnitudes> out;
  at::NoGradGuard no_grad;
  for (int role = 0; role < 3; ++role) {
    if (!banks_[role].defined()) continue;
    // Effective matrix per entry: W1 Wd (q, k) or W1 Wd W2 (v), C x C2H or C x C'.
    const at::Tensor w1 = down_[role]->weight.detach().t();  // [C, C1 H]
    at::Tensor eff = at::matmul(w1, banks_[role].detach());  // [E, C, C2 H]
    if (role == 2) eff = at::matmul(eff, up_v_.detach());      // [E, C, C']
    out.push_back(bank_magnitudes(kRoles[role], eff, table_));
  }
  return out;
}

std::vector<at::Tensor> LoRTranslutionAttention::relative_banks() const {
  std::vector<at::Tensor> banks;
  for (const at::Tensor& b : banks_)
    if (b.defined()) banks.push_back(b);
  return banks;
}

}  // namespace translution
