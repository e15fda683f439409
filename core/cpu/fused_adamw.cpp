#include "cpu/fused_adamw.h"

#include <array>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include "cpu/helper_threads.h"
#include "util/engine_options.h"
#include "util/optimizer_state_key.h"

namespace translution {
namespace {

struct Coefficients {
  double decay, beta1, beta2, step_size, sqrt_bc2, eps;
};

// The update of LibTorch's AdamW, element by element and in the same order of
// operations (so float results agree to rounding):
//   p *= 1 - lr wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
// Vectorised: core/CMakeLists.txt builds this file with -fno-math-errno, since a
// sqrt that may set errno keeps GCC from vectorising the loop.
template <typename T>
void update_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t begin,
                  int64_t end, T decay, T b1, T b2, T a1, T a2, T step, T sqrt_bc2, T eps) {
  for (int64_t i = begin; i < end; ++i) {
    const T gi = g[i];
    const T mi = m[i] * b1 + a1 * gi;
    const T vi = v[i] * b2 + a2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay + step * (mi / (std::sqrt(vi) / sqrt_bc2 + eps));
  }
}

template <typename T>
void update(const EngineOptions& engine, T* p, const T* g, T* m, T* v, int64_t n, const Coefficients& c) {
  run_chunks(n, element_grain(engine, 1 << 16), element_parts(engine), [&](int64_t begin, int64_t end) {
    update_range<T>(p, g, m, v, begin, end, T(c.decay), T(c.beta1), T(c.beta2), T(1 - c.beta1),
                    T(1 - c.beta2), T(-c.step_size), T(c.sqrt_bc2), T(c.eps));
  });
}

// The closure's loss, computed with gradients as LibTorch's optimizers do, or undefined.
at::Tensor evaluated(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

bool fusable(const at::Tensor& p) {
  const at::Tensor& g = p.grad();
  return p.is_cpu() && (p.scalar_type() == at::kFloat || p.scalar_type() == at::kDouble) &&
         p.is_contiguous() &&
         (!g.defined() || (!g.is_sparse() && g.is_contiguous() && g.scalar_type() == p.scalar_type()));
}

}  // namespace

bool FusedAdamW::can_fuse() const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params())
      if (!fusable(p)) return false;
  }
  return true;
}

bool FusedAdamW::can_step_multi_tensor() const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params())
      if (p.grad().defined() && p.grad().is_sparse()) return false;
  }
  return true;
}

// The parameter's state, made as LibTorch's AdamW makes it on its first step.
torch::optim::AdamWParamState& adamw_state(torch::optim::AdamW& optimizer, const at::Tensor& p) {
  auto& state = optimizer.state();
  const auto key = optimizer_state_key<std::decay_t<decltype(state)>>(p);
  auto found = state.find(key);
  if (found == state.end()) {
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->step(0);
    fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Contiguous));
    fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Contiguous));
    found = state.emplace(key, std::move(fresh)).first;
  }
  return static_cast<torch::optim::AdamWParamState&>(*found->second);
}

torch::optim::AdamWParamState& FusedAdamW::state_of(const at::Tensor& p) { return adamw_state(*this, p); }

at::Tensor FusedAdamW::multi_tensor_step(LossClosure closure) {
  if (!can_step_multi_tensor()) return torch::optim::AdamW::step(std::move(closure));
  const at::Tensor loss = evaluated(closure);
  at::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    // Parameters that share a step count share the bias corrections: one list each.
    std::map<int64_t, std::array<std::vector<at::Tensor>, 4>> lists;  // p, g, m, v
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = state_of(p);
      s.step(s.step() + 1);
      auto& l = lists[s.step()];
      l[0].push_back(p);
      l[1].push_back(p.grad());
      l[2].push_back(s.exp_avg());
      l[3].push_back(s.exp_avg_sq());
    }
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& [step, l] : lists) {
      const double bc1 = 1 - std::pow(beta1, double(step)), bc2 = 1 - std::pow(beta2, double(step));
      // LibTorch's AdamW, op for op: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
      // p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
      if (o.weight_decay() != 0) at::_foreach_mul_(l[0], 1 - o.lr() * o.weight_decay());
      at::_foreach_mul_(l[2], beta1);
      at::_foreach_add_(l[2], l[1], 1 - beta1);
      at::_foreach_mul_(l[3], beta2);
      at::_foreach_addcmul_(l[3], l[1], l[1], 1 - beta2);
      std::vector<at::Tensor> denom = at::_foreach_sqrt(l[3]);
      at::_foreach_div_(denom, std::sqrt(bc2));
      at::_foreach_add_(denom, o.eps());
      at::_foreach_addcdiv_(l[0], l[2], denom, -o.lr() / bc1);
    }
  }
  return loss;
}

at::Tensor FusedAdamW::step(LossClosure closure) {
  if (!can_fuse()) {
    bool dense_device = false;  // parameters off the CPU: the multi-tensor ops launch few kernels there
    for (const auto& group : param_groups())
      for (const auto& p : group.params()) dense_device = dense_device || !p.is_cpu();
    if (dense_device) return multi_tensor_step(std::move(closure));
    return torch::optim::AdamW::step(std::move(closure));
  }
  const at::Tensor loss = evaluated(closure);
  at::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = state_of(p);
      s.step(s.step() + 1);
      const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
      const double bc1 = 1 - std::pow(beta1, double(s.step())), bc2 = 1 - std::pow(beta2, double(s.step()));
      const Coefficients c{
          1 - o.lr() * o.weight_decay(), beta1, beta2, o.lr() / bc1, std::sqrt(bc2), o.eps()};
      at::Tensor m = s.exp_avg(), v = s.exp_avg_sq();
      if (!m.is_contiguous() || !v.is_contiguous()) {  // e.g. loaded from an archive that kept strides
        m = m.contiguous();
        v = v.contiguous();
        s.exp_avg(m);
        s.exp_avg_sq(v);
      }
      const at::Tensor g = p.grad();
      if (p.scalar_type() == at::kFloat)
        update(engine_, p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
               p.numel(), c);
      else
        update(engine_, p.data_ptr<double>(), g.data_ptr<double>(), m.data_ptr<double>(),
               v.data_ptr<double>(), p.numel(), c);
      torch::autograd::impl::bump_version(p);  // as an in-place op would, for autograd's saved-tensor checks
    }
  }
  return loss;
}

std::unique_ptr<torch::optim::AdamW> make_adamw(const EngineOptions& engine, std::vector<at::Tensor> params,
                                                const torch::optim::AdamWOptions& options) {
  if (engine.reference) return std::make_unique<torch::optim::AdamW>(std::move(params), options);
  return std::make_unique<FusedAdamW>(std::move(params), options, engine);
}

}  // namespace translution
