#include "nn/translution_attention.h"

#include <cmath>

#include <ATen/ATen.h>

#include "nn/attention_math.h"
#include "nn/self_attention.h"

namespace translution {
namespace {
const char* kRoles[3] = {"q", "k", "v"};

const RoleTable& role_table(const RelativeTable& t, int role) {
  return role == 0 ? t.q : role == 1 ? t.k : t.v;
}
}  // namespace

at::Tensor make_relative_bank(int64_t entries, int64_t in, int64_t out) {
  const double bound = 1.0 / std::sqrt(double(in));
  return at::empty({entries, in, out}).uniform_(-bound, bound);
}

const PairPlanTensors& plan_tensors_for(const PairPlan& plan, PairPlanTensors& cached, const c10::Device& device) {
  if (!cached.rows.defined() || cached.rows.device() != device) cached = plan_tensors_on(plan, device);
  return cached;
}

TranslutionAttention::TranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape,
                                           const TokenLayout& layout)
    : spec_(spec), shape_(shape), table_(make_relative_table(layout, spec.encoding)) {
  spec_.validate();
  relative_ = {spec.rel_q, spec.rel_k, spec.rel_v};
  for (int role = 0; role < 3; ++role) {
    const std::string name = kRoles[role];
    if (relative_[role]) {
      plans_[role] = make_pair_plan(role_table(table_, role), table_.valid, table_.entries);
      banks_[role] = register_parameter("w" + name, make_relative_bank(table_.entries, shape.dim, shape.inner()));
    } else {
      plain_[role] = register_module(
          "to_" + name, torch::nn::Linear(torch::nn::LinearOptions(shape.dim, shape.inner()).bias(false)));
    }
  }
  if (needs_output_projection(shape)) to_out_ = register_module("to_out", torch::nn::Linear(shape.inner(), shape.dim));
  if (layout.causal) valid_ = table_.valid;
}

at::Tensor TranslutionAttention::project(int role, const at::Tensor& x) {
  if (!relative_[role]) return plain_[role]->forward(x);
  return project_pairs(x, banks_[role], plans_[role], plan_tensors_for(plans_[role], plan_tensors_[role], x.device()));
}

at::Tensor TranslutionAttention::forward(const at::Tensor& x, at::Tensor* probs) {
  const at::Tensor q = project(0, x), k = project(1, x);
  const at::Tensor logits = attention_logits(q, k, shape_.heads) / std::sqrt(double(shape_.head_dim));
  const at::Tensor alpha = attention_softmax(logits, on_device(valid_, x.device()));
  if (probs) *probs = alpha.detach();
  const at::Tensor out = attend_values(alpha, project(2, x), shape_.heads);
  return to_out_ ? to_out_->forward(out) : out;
}

std::vector<OffsetMagnitudes> TranslutionAttention::offset_magnitudes() const {
  std::vector<OffsetMagnitudes> out;
  at::NoGradGuard no_grad;
  for (int role = 0; role < 3; ++role)
    if (relative_[role])
      out.push_back({kRoles[role], banks_[role].detach().pow(2).sum(at::IntArrayRef{1, 2}).sqrt().to(at::kCPU, at::kFloat)});
  return out;
}

}  // namespace translution
