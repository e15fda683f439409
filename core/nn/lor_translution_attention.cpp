#include "nn/lor_translution_attention.h"

#include <cmath>

#include <ATen/ATen.h>

#include "nn/attention_math.h"
#include "nn/self_attention.h"
#include "nn/translution_attention.h"

namespace translution {
namespace {
const char* kRoles[3] = {"q", "k", "v"};

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}
}  // namespace

LoRTranslutionAttention::LoRTranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape,
                                                 const TokenLayout& layout)
    : spec_(spec),
      shape_(shape),
      table_(make_relative_table(layout, spec.encoding)),
      low_in_(spec.lor_c1 * shape.heads),
      low_out_(spec.lor_c2 * shape.heads) {
  spec_.validate();
  const bool rel[3] = {spec.rel_q, spec.rel_k, spec.rel_v};
  const bool low_rank_logits = spec.rel_q || spec.rel_k;
  for (int role = 0; role < 3; ++role) {
    const std::string name = kRoles[role];
    if (spec.lor_shared) shared_[role] = register_module("to_" + name, linear(shape.dim, shape.inner()));
    if (rel[role]) {
      const RoleTable& rt = role == 0 ? table_.q : role == 1 ? table_.k : table_.v;
      plans_[role] = make_pair_plan(rt, table_.valid, table_.entries);
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

at::Tensor LoRTranslutionAttention::low_rank_query_or_key(int role, const at::Tensor& x) {
  const at::Tensor low = down_[role]->forward(x);
  if (!banks_[role].defined()) return low;
  return project_pairs(low, banks_[role], plans_[role], plan_tensors_for(plans_[role], plan_tensors_[role], x.device()));
}

at::Tensor LoRTranslutionAttention::forward(const at::Tensor& x, at::Tensor* probs) {
  const int64_t B = x.size(0), N = x.size(1), H = shape_.heads, dh = shape_.head_dim;
  at::Tensor logits;
  if (spec_.lor_shared) logits = attention_logits(shared_[0]->forward(x), shared_[1]->forward(x), H);
  if (spec_.rel_q || spec_.rel_k) {
    const at::Tensor low = attention_logits(low_rank_query_or_key(0, x), low_rank_query_or_key(1, x), H);
    logits = logits.defined() ? logits + low : low;
  }
  const at::Tensor alpha = attention_softmax(logits / std::sqrt(double(dh)), on_device(valid_, x.device()));
  if (probs) *probs = alpha.detach();

  at::Tensor out;
  if (spec_.lor_shared) out = attend_values(alpha, shared_[2]->forward(x), H);
  if (spec_.rel_v) {
    const at::Tensor u = project_pairs(down_[2]->forward(x), banks_[2], plans_[2],
                                       plan_tensors_for(plans_[2], plan_tensors_[2], x.device()));
    // s[b, i, h] = sum_j alpha[b, h, i, j] u[i, j, b]: [B, N, H, C2 H]
    const at::Tensor s = (alpha.permute({2, 3, 0, 1}).unsqueeze(-1) * u.unsqueeze(3)).sum(1).permute({1, 0, 2, 3});
    const at::Tensor rel = at::einsum("bihc,chd->bihd", {s, up_v_.view({low_out_, H, dh})}).reshape({B, N, H * dh});
    out = out.defined() ? out + rel : rel;
  }
  return to_out_ ? to_out_->forward(out) : out;
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
    out.push_back({kRoles[role], eff.pow(2).sum(at::IntArrayRef{1, 2}).sqrt().to(at::kCPU, at::kFloat)});
  }
  return out;
}

}  // namespace translution
