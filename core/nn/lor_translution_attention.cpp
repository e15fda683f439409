#include "nn/lor_translution_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "cpu/head_attention.h"
#include "cpu/linear.h"
#include "nn/attention_math.h"
#include "nn/lor_work.h"
#include "nn/offset_magnitudes.h"
#include "nn/relative_logits.h"
#include "nn/relative_values.h"
#include "nn/self_attention.h"
#include "nn/translution_attention.h"

namespace translution {
namespace {
const char* kRoles[3] = {"q", "k", "v"};

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// rel[b, i, h] = s[b, i, h] W2v[:, h], s: [B, N, H, C2 H], up: [C2 H, H dh] -> [B, N, H dh].
at::Tensor up_project(const EngineOptions& engine, const at::Tensor& s, const at::Tensor& up, int64_t H,
                      int64_t dh) {
  if (at::Tensor fast = head_up_projection(engine, s, up, H, dh); fast.defined()) return fast;
  const int64_t B = s.size(0), N = s.size(1), c = s.size(3);
  return at::einsum("bihc,chd->bihd", {s, up.view({c, H, dh})}).reshape({B, N, H * dh});
}

// AttentionSpec::lor_value_slices: head h keeps its own slice of s, s[b, i, h, h C2 : (h + 1) C2],
// and the slices side by side go through W2v: [B, M, H, C2 H] -> [B, M, C'].
at::Tensor up_project_slices(const at::Tensor& s, const at::Tensor& up) {
  const int64_t B = s.size(0), M = s.size(1), H = s.size(2), c2 = s.size(3) / H;
  const at::Tensor slices = s.view({B, M, H, H, c2}).diagonal(0, 2, 3);  // [B, M, C2, H]
  return at::matmul(slices.transpose(2, 3).reshape({B, M, H * c2}), up);
}

// [M, G, N]: 1 where query i's pair with j is visible and uses entries[g].
at::Tensor entry_assignment(const RelativeTable& table, int64_t queries,
                            const std::vector<int64_t>& entries) {
  const int64_t G = int64_t(entries.size());
  const at::Tensor entry = table.entry.narrow(0, 0, queries).unsqueeze(1);   // [M, 1, N]
  const at::Tensor valid = table.valid.narrow(0, 0, queries).unsqueeze(1);   // [M, 1, N]
  const at::Tensor wanted = at::tensor(entries, at::kLong).view({1, G, 1});  // [1, G, 1]
  return entry.eq(wanted).logical_and(valid).to(at::kFloat);                 // [M, G, N]
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
  if (needs_output_projection(shape))
    to_out_ = register_module("to_out", torch::nn::Linear(shape.inner(), shape.dim));
  if (spec.rotary) rotary_ = RotaryPositions(layout, shape.head_dim);
  if (layout.causal) valid_ = table_.valid;
}

at::Tensor LoRTranslutionAttention::attend_reassociated(const EngineOptions& engine, const at::Tensor& x,
                                                        int64_t queries, const std::vector<int64_t>& entries,
                                                        at::Tensor* probs) {
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), H = shape_.heads, dh = shape_.head_dim;
  const int64_t M = queries, G = int64_t(entries.size()), c1 = low_in_, c2 = low_out_, C2 = spec_.lor_c2;
  const Reassociation& constants = reassociation(M, entries, x);
  const at::Tensor assign = constants.assign.view({1, 1, M, G, N});
  const at::Tensor& index = constants.index;
  const at::Tensor xq = query_tokens(x, M);
  // kappa [B, M, G, H, C]: what each input x_j is dotted with for query m's logit under entry g, head h.
  at::Tensor kappa;
  if (spec_.rel_q || spec_.rel_k) {
    const at::Tensor low_q = at::matmul(xq, down_[0]->weight.t());  // [B, M, C1 H] (relative) or [B, M, C2 H]
    const at::Tensor q = spec_.rel_q ? at::einsum("bma,gac->bmgc", {low_q, banks_[0].index_select(0, index)})
                                     : low_q.unsqueeze(2).expand({B, M, G, c2});
    const at::Tensor q_heads = q.reshape({B, M, G, H, C2});
    if (spec_.rel_k) {  // x_j W1k Bk[g], head h's columns: x_j . W1k^T (Bk[g]_h q_h)
      const at::Tensor bank = banks_[1].index_select(0, index).view({G, c1, H, C2});
      kappa = at::matmul(at::einsum("bmghc,gahc->bmgha", {q_heads, bank}), down_[1]->weight);
    } else {  // the plain low side x_j W_low, head h's rows
      kappa = at::einsum("bmghc,hca->bmgha", {q_heads, down_[1]->weight.view({H, C2, C})});
    }
  }
  if (spec_.lor_shared) {
    const at::Tensor q = at::matmul(xq, shared_[0]->weight.t()).view({B, M, H, dh});
    const at::Tensor shared = heads_through_weight(q, shared_[1]->weight).unsqueeze(2);
    kappa = kappa.defined() ? kappa + shared : shared.expand({B, M, G, H, C});
  }
  const at::Tensor per_entry = at::einsum("bmgha,bna->bhmgn", {kappa, x});
  const at::Tensor logits = (per_entry * assign).sum(3);
  const at::Tensor alpha =
      attention_softmax(engine, logits, query_rows(on_device(valid_, x.device()), M), std::sqrt(double(dh)));
  if (probs) *probs = alpha.detach();
  // Each entry's weighted inputs, sum_{j of g} alpha^h_mj x_j: [B, M, G, H, C].
  const at::Tensor mixed = at::einsum("bhmgn,bna->bmgha", {alpha.unsqueeze(3) * assign, x});
  at::Tensor out;  // [B, M, H, dh]
  if (spec_.lor_shared) out = heads_from_weight(mixed.sum(2), shared_[2]->weight);
  if (spec_.rel_v) {
    const at::Tensor low = at::einsum(
        "bmgha,gac->bmghc", {at::matmul(mixed, down_[2]->weight.t()), banks_[2].index_select(0, index)});
    const at::Tensor rel = at::einsum("bmghc,chd->bmhd", {low, up_v_.view({c2, H, dh})});
    out = out.defined() ? out + rel : rel;
  }
  return out.reshape({B, M, H * dh});
}

const LoRTranslutionAttention::Reassociation& LoRTranslutionAttention::reassociation(
    int64_t queries, const std::vector<int64_t>& entries, const at::Tensor& x) {
  return reassociations_.get({queries, entries, x.dtype(), x.device()}, [&] {
    return Reassociation{entry_assignment(table_, queries, entries).to(x.options()),
                         at::tensor(entries, at::TensorOptions(at::kLong)).to(x.device())};
  });
}

at::Tensor LoRTranslutionAttention::attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                                           at::Tensor* probs) {
  const PairOrder& order = orders_.get(table_, queries, x.device());
  const std::vector<int64_t> entries = reassociated_entries(engine, spec_, shape_, order, x.size(0));
  if (!entries.empty()) {
    const at::Tensor out = attend_reassociated(engine, x, queries, entries, probs);
    return to_out_ ? linear(engine, to_out_, out) : out;
  }
  const int64_t H = shape_.heads, dh = shape_.head_dim;
  // Every projection of x the layer needs, in one hand-off to the cores (cpu/linear.h):
  // shared[r] = x W^r and low[r] = x W1^r (relative) or x W_low^r (plain side of the
  // logits); the query side's for the tokens asked for, a second hand-off when fewer.
  at::Tensor shared[3], low[3];
  auto project = [&](int first_role, int end_role, const at::Tensor& input) {
    std::vector<torch::nn::Linear*> layers;
    std::vector<at::Tensor*> targets;
    for (int role = first_role; role < end_role; ++role) {
      if (spec_.lor_shared) {
        layers.push_back(&shared_[role]);
        targets.push_back(&shared[role]);
      }
      if (down_[role]) {
        layers.push_back(&down_[role]);
        targets.push_back(&low[role]);
      }
    }
    if (layers.empty()) return;
    std::vector<at::Tensor> projected = linear_each(engine, layers, input);
    for (size_t i = 0; i < targets.size(); ++i) *targets[i] = std::move(projected[i]);
  };
  if (queries == x.size(1)) {
    project(0, 3, x);
  } else {
    project(0, 1, query_tokens(x, queries));
    project(1, 3, x);
  }

  if (spec_.rotary) {
    shared[0] = rotary_.rotate(shared[0], H);
    shared[1] = rotary_.rotate(shared[1], H);
  }
  at::Tensor logits;
  if (spec_.lor_shared) logits = attention_logits(engine, shared[0], shared[1], H);
  if (spec_.rel_q || spec_.rel_k) {
    const at::Tensor rel = relative_logits(engine, order, low[0], banks_[0], low[1], banks_[1], H);
    logits = logits.defined() ? logits + rel : rel;
  }
  const at::Tensor alpha = attention_softmax(
      engine, logits, query_rows(on_device(valid_, x.device()), queries), std::sqrt(double(dh)));
  if (probs) *probs = alpha.detach();

  at::Tensor out;
  if (spec_.lor_shared) out = attend_values(engine, alpha, shared[2], H);
  if (spec_.rel_v) {
    // s[b, i, h] = sum_j alpha^h_ij (x_j W1v Wv[d_ij]), then W2v per head (Appendix D's order).
    const at::Tensor s = relative_values(engine, order, alpha, low[2], banks_[2], false);  // [B, M, H, C2 H]
    const at::Tensor rel =
        spec_.lor_value_slices ? up_project_slices(s, up_v_) : up_project(engine, s, up_v_, H, dh);
    out = out.defined() ? out + rel : rel;
  }
  return to_out_ ? linear(engine, to_out_, out) : out;
}

std::vector<OffsetMagnitudes> LoRTranslutionAttention::offset_magnitudes() const {
  std::vector<OffsetMagnitudes> out;
  at::NoGradGuard no_grad;
  for (int role = 0; role < 3; ++role) {
    if (!banks_[role].defined()) continue;
    // Effective matrix per entry: W1 Wd (q, k) or W1 Wd W2 (v), C x C2H or C x C'.
    const at::Tensor w1 = down_[role]->weight.detach().t();  // [C, C1 H]
    at::Tensor eff = at::matmul(w1, banks_[role].detach());  // [E, C, C2 H]
    if (role == 2) eff = at::matmul(eff, up_v_.detach());    // [E, C, C']
    out.push_back(bank_magnitudes(kRoles[role], eff, table_));
  }
  return out;
}

// The relative term of the values only: W1v Wv[d] W2v per entry (the shared Wv is the same for every offset).
at::Tensor LoRTranslutionAttention::value_contributions(const at::Tensor& x, const at::Tensor& alpha) const {
  if (!banks_[2].defined()) return {};
  at::NoGradGuard no_grad;
  const at::Tensor effective =
      at::matmul(at::matmul(down_[2]->weight.detach().t(), banks_[2].detach()), up_v_.detach());
  return value_contributions_of(effective, table_, x, alpha);
}

std::vector<at::Tensor> LoRTranslutionAttention::relative_banks() const {
  std::vector<at::Tensor> banks;
  for (const at::Tensor& b : banks_)
    if (b.defined()) banks.push_back(b);
  return banks;
}

}  // namespace translution
