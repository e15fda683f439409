#include "train/capturable_adamw.h"

#include <cmath>

#include <ATen/ATen.h>
#include <torch/version.h>

#include "cpu/fused_adamw.h"
#include "util/error.h"

namespace translution {
namespace {

enum Column { kDecay, kBeta1, kBeta2, kNegativeStepSize, kSqrtBc2, kColumns };

// Every tensor of `list` times `scale`, a one-element tensor on their device. LibTorch
// 2.1 has a multi-tensor op for it; before, the list form over views of `scale`.
void scale_each(const std::vector<at::Tensor>& list, const at::Tensor& scale) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  at::_foreach_mul_(list, scale);
#else
  std::vector<at::Tensor> scales;
  scales.reserve(list.size());
  for (const at::Tensor& t : list) scales.push_back(scale.expand_as(t));
  at::_foreach_mul_(list, scales);
#endif
}

}  // namespace

CapturableAdamW::CapturableAdamW(torch::optim::AdamW& optimizer) : optimizer_(optimizer) {
  for (auto& group : optimizer_.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    if (o.amsgrad()) throw Error("internal: the capturable AdamW step has no amsgrad");
    const size_t first = lists_.size();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse()) throw Error("internal: the capturable AdamW step takes dense gradients");
      auto& s = adamw_state(optimizer_, p);
      size_t l = first;
      while (l < lists_.size() && lists_[l].step != s.step()) ++l;
      if (l == lists_.size())
        lists_.push_back({&o, s.step(), {}, {}, {}, {}, at::empty({2, kColumns}, p.options())});
      lists_[l].p.push_back(p);
      lists_[l].g.push_back(p.grad());
      lists_[l].m.push_back(s.exp_avg());
      lists_[l].v.push_back(s.exp_avg_sq());
    }
  }
  if (lists_.empty()) throw Error("internal: the capturable AdamW step found no parameter with a gradient");
}

void CapturableAdamW::set_lr(double lr) {
  for (Lists& l : lists_) {
    const auto& o = *l.options;
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    const double bc1 = 1 - std::pow(beta1, double(l.step + 1)), bc2 = 1 - std::pow(beta2, double(l.step + 1));
    const double rows[2][kColumns] = {{1, 1, 1, 0, 1},
                                      {1 - lr * o.weight_decay(), beta1, beta2, -lr / bc1, std::sqrt(bc2)}};
    l.table.copy_(at::tensor(at::ArrayRef<double>(&rows[0][0], 2 * kColumns)).view({2, kColumns}));
  }
}

void CapturableAdamW::step(const at::Tensor& apply) {
  at::NoGradGuard no_grad;
  const at::Tensor row_index = apply.to(at::kLong).reshape({1});
  for (const Lists& l : lists_) {
    const at::Tensor row = l.table.index_select(0, row_index).select(0, 0);  // [kColumns]
    const auto& o = *l.options;
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    if (o.weight_decay() != 0) scale_each(l.p, row.select(0, kDecay));
    scale_each(l.m, row.select(0, kBeta1));
    at::_foreach_add_(l.m, l.g, 1 - beta1);  // a skipped step's gradients are zero: m unchanged
    scale_each(l.v, row.select(0, kBeta2));
    at::_foreach_addcmul_(l.v, l.g, l.g, 1 - beta2);
    // The update in one temporary the size of the weights: m / (sqrt(v) / sqrt(bc2) + eps).
    std::vector<at::Tensor> update = at::_foreach_sqrt(l.v);
    scale_each(update, row.select(0, kSqrtBc2).reciprocal());
    at::_foreach_add_(update, o.eps());
    at::_foreach_reciprocal_(update);
    at::_foreach_mul_(update, l.m);
    scale_each(update, row.select(0, kNegativeStepSize));  // 0 on a skipped step
    at::_foreach_add_(l.p, update);
  }
}

void CapturableAdamW::count_applied_step() {
  for (Lists& l : lists_) {
    ++l.step;
    for (const at::Tensor& p : l.p) {
      auto& s = adamw_state(optimizer_, p);
      s.step(s.step() + 1);
    }
  }
}

}  // namespace translution
