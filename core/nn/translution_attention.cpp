#include "nn/translution_attention.h"

#include <cmath>

#include <ATen/ATen.h>

#include "cpu/linear.h"
#include "nn/attention_math.h"
#include "nn/offset_magnitudes.h"
#include "nn/relative_logits.h"
#include "nn/relative_values.h"
#include "nn/self_attention.h"

namespace translution {
namespace {
const char* kRoles[3] = {"q", "k", "v"};
}  // namespace

at::Tensor make_relative_bank(int64_t entries, int64_t in, int64_t out) {
  const double bound = 1.0 / std::sqrt(double(in));
  return at::empty({entries, in, out}).uniform_(-bound, bound);
}

TranslutionAttention::TranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape,
                                           const TokenLayout& layout)
    : spec_(spec), shape_(shape), table_(make_relative_table(layout, spec.encoding)), orders_(table_) {
  spec_.validate();
  const bool relative[3] = {spec.rel_q, spec.rel_k, spec.rel_v};
  for (int role = 0; role < 3; ++role) {
    const std::string name = kRoles[role];
    if (relative[role])
      banks_[role] =
          register_parameter("w" + name, make_relative_bank(table_.entries, shape.dim, shape.inner()));
    else
      plain_[role] = register_module(
          "to_" + name, torch::nn::Linear(torch::nn::LinearOptions(shape.dim, shape.inner()).bias(false)));
  }
  if (needs_output_projection(shape))
    to_out_ = register_module("to_out", torch::nn::Linear(shape.inner(), shape.dim));
  if (spec.rotary) rotary_ = RotaryPositions(layout, shape.head_dim);
  if (layout.causal) valid_ = table_.valid;
}

at::Tensor TranslutionAttention::attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                                        at::Tensor* probs) {
  const PairOrder& order = orders_.get(table_, queries, x.device());
  const int64_t H = shape_.heads;
  // Each side of the dot product is x with a bank (relative) or the plain projection;
  // the query side only for the tokens asked for.
  const at::Tensor queried = query_tokens(x, queries);
  auto side = [&](int role) {
    const at::Tensor& input = role == 0 ? queried : x;
    if (banks_[role].defined()) return input;
    const at::Tensor projected = linear(engine, plain_[role], input);
    return spec_.rotary && role < 2 ? rotary_.rotate(projected, H) : projected;
  };
  const at::Tensor logits = spec_.rel_q || spec_.rel_k
                                ? relative_logits(engine, order, side(0), banks_[0], side(1), banks_[1], H)
                                : attention_logits(engine, side(0), side(1), H);
  const at::Tensor alpha = attention_softmax(
      engine, logits, query_rows(on_device(valid_, x.device()), queries), std::sqrt(double(shape_.head_dim)));
  if (probs) *probs = alpha.detach();
  const at::Tensor out = spec_.rel_v ? relative_values(engine, order, alpha, x, banks_[2], true)
                                     : attend_values(engine, alpha, side(2), H);
  return to_out_ ? linear(engine, to_out_, out) : out;
}

std::vector<OffsetMagnitudes> TranslutionAttention::offset_magnitudes() const {
  std::vector<OffsetMagnitudes> out;
  at::NoGradGuard no_grad;
  for (int role = 0; role < 3; ++role)
    if (banks_[role].defined()) out.push_back(bank_magnitudes(kRoles[role], banks_[role].detach(), table_));
  return out;
}

at::Tensor TranslutionAttention::value_contributions(const at::Tensor& x, const at::Tensor& alpha) const {
  return banks_[2].defined() ? value_contributions_of(banks_[2], table_, x, alpha) : at::Tensor();
}

std::vector<at::Tensor> TranslutionAttention::relative_banks() const {
  std::vector<at::Tensor> banks;
  for (const at::Tensor& b : banks_)
    if (b.defined()) banks.push_back(b);
  return banks;
}

}  // namespace translution
