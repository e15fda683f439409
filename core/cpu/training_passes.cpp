#include "cpu/training_passes.h"

#include <algorithm>
#include <atomic>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include "cpu/helper_threads.h"
#include "cpu/inference_passes.h"
#include "cpu/layer_norm_rows.h"
#include "cpu/vector_math.h"
#include "util/engine_options.h"
#include "util/full_precision.h"
#include "util/kept_options.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kElementGrain = 1 << 14;  // per part: below this the hand-off costs more than it saves
constexpr int64_t kRowGrain = 64;           // LayerNorm's backward: rows per part at least

// body(begin, end) over [0, n) elements (or rows), split over the cores.
template <typename Body>
void split(const EngineOptions& engine, int64_t n, int64_t grain, Body body) {
  run_chunks(n, element_grain(engine, grain), element_parts(engine), body);
}

class Gelu : public torch::autograd::Function<Gelu> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const EngineOptions& engine) {
    ctx->save_for_backward({x});
    keep_options(ctx, engine);
    at::Tensor y = at::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trained_gelu", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* yp = y.data_ptr<scalar_t>();
      split(engine, x.numel(), kElementGrain,
            [&](int64_t begin, int64_t end) { gelu(xp + begin, yp + begin, end - begin); });
    });
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    // create_graph: the gradient must be differentiable itself.
    if (at::GradMode::is_enabled()) return {at::gelu_backward(grads[0], x), {}};
    const at::Tensor dy = grads[0].contiguous();
    at::Tensor dx = at::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trained_gelu_backward", [&] {
      const scalar_t *xp = x.data_ptr<scalar_t>(), *dyp = dy.data_ptr<scalar_t>();
      scalar_t* dxp = dx.data_ptr<scalar_t>();
      split(kept_options(ctx), x.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
        gelu_backward(xp + begin, dyp + begin, dxp + begin, end - begin);
      });
    });
    return {dx, {}};
  }
};

}  // namespace

at::Tensor softmax_rows(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                        double scale, int parts) {
  at::Tensor alpha = logits.clone();
  const int64_t n = alpha.size(-1), queries = alpha.size(-2), rows = n ? alpha.numel() / n : 0;
  const bool* kept = valid.defined() && valid.numel() ? valid.data_ptr<bool>() : nullptr;
  if (rows == 0) return alpha;
  AT_DISPATCH_FLOATING_TYPES(alpha.scalar_type(), "softmax_rows", [&] {
    scalar_t* a = alpha.data_ptr<scalar_t>();
    run_chunks(rows, element_grain(engine, kElementGrain / n + 1), parts, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        scaled_softmax_in_place(a + r * n, n, scalar_t(scale), kept ? kept + r % queries * n : nullptr);
    });
  });
  return alpha;
}

namespace {

class ScaledSoftmax : public torch::autograd::Function<ScaledSoftmax> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& valid,
                            double scale, const EngineOptions& engine) {
    const at::Tensor alpha = softmax_rows(engine, logits, valid, scale, element_parts(engine));
    ctx->save_for_backward({alpha});
    keep_options(ctx, engine);
    ctx->saved_data["scale"] = scale;
    return alpha;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor alpha = ctx->get_saved_variables()[0];
    const double scale = ctx->saved_data["scale"].toDouble();
    if (at::GradMode::is_enabled())
      return {scale * alpha * (grads[0] - (grads[0] * alpha).sum(-1, true)), {}, {}, {}};
    const at::Tensor g = grads[0].contiguous();
    at::Tensor d = at::empty_like(alpha);
    const int64_t n = alpha.size(-1), rows = n ? alpha.numel() / n : 0;
    AT_DISPATCH_FLOATING_TYPES(alpha.scalar_type(), "trained_softmax_backward", [&] {
      const scalar_t *a = alpha.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>();
      scalar_t* dp = d.data_ptr<scalar_t>();
      split(kept_options(ctx), rows, kElementGrain / n + 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          softmax_backward(a + r * n, gp + r * n, dp + r * n, n, scalar_t(scale));
      });
    });
    return {d, {}, {}, {}};
  }
};

// LayerNorm over the last dimension, its rows split over the cores; backward
// sums each part's share of dgamma and dbeta in its own buffer, then adds the
// parts in order (the result does not depend on which thread ran a part).
class LayerNorm : public torch::autograd::Function<LayerNorm> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& gamma,
                            const at::Tensor& beta, double eps, const EngineOptions& engine) {
    const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
    at::Tensor y = at::empty_like(x), mean = at::empty({rows}, x.options()),
               rstd = at::empty({rows}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trained_layer_norm", [&] {
      const scalar_t *xp = x.data_ptr<scalar_t>(), *gp = gamma.data_ptr<scalar_t>(),
                     *bp = beta.data_ptr<scalar_t>();
      scalar_t *yp = y.data_ptr<scalar_t>(), *mp = mean.data_ptr<scalar_t>(), *rp = rstd.data_ptr<scalar_t>();
      split(engine, rows, kElementGrain / n + 1, [&](int64_t begin, int64_t end) {
        layer_norm_rows<scalar_t>(xp + begin * n, yp + begin * n, end - begin, n, gp, bp, eps, mp + begin,
                                  rp + begin);
      });
    });
    ctx->save_for_backward({x, gamma, mean, rstd});
    ctx->saved_data["eps"] = eps;
    keep_options(ctx, engine);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &gamma = saved[1], &mean = saved[2], &rstd = saved[3];
    const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
    if (at::GradMode::is_enabled()) {  // create_graph: from x again, with LibTorch's differentiable ops
      const at::Tensor s = at::rsqrt(x.var(-1, false, true) + ctx->saved_data["eps"].toDouble());
      const at::Tensor xhat = (x - x.mean(-1, true)) * s, g = grads[0], gy = g * gamma;
      const at::Tensor dx = (gy - gy.mean(-1, true) - xhat * (gy * xhat).mean(-1, true)) * s;
      return {dx, (g * xhat).reshape({rows, n}).sum(0), g.reshape({rows, n}).sum(0), {}, {}};
    }
    const at::Tensor g = grads[0].contiguous();
    at::Tensor dx = at::empty_like(x);
    const EngineOptions engine = kept_options(ctx);
    const int parts =
        int(std::clamp<int64_t>(rows / element_grain(engine, kRowGrain), 1, element_parts(engine)));
    at::Tensor partial = at::zeros({parts, 2, n}, x.options());  // each part's dgamma and dbeta
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trained_layer_norm_backward", [&] {
      const scalar_t *xp = x.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>(),
                     *wp = gamma.data_ptr<scalar_t>();
      const scalar_t *mp = mean.data_ptr<scalar_t>(), *rp = rstd.data_ptr<scalar_t>();
      scalar_t *dxp = dx.data_ptr<scalar_t>(), *pp = partial.data_ptr<scalar_t>();
      const bool parameters = ctx->needs_input_grad(1) || ctx->needs_input_grad(2);
      run_parts(parts, [&](int p) {
        const int64_t begin = rows * p / parts, end = rows * (p + 1) / parts;
        layer_norm_rows_backward<scalar_t>(
            xp + begin * n, gp + begin * n, mp + begin, rp + begin, wp, end - begin, n, dxp + begin * n,
            parameters ? pp + 2 * p * n : nullptr, parameters ? pp + (2 * p + 1) * n : nullptr);
      });
    });
    if (!ctx->needs_input_grad(1) && !ctx->needs_input_grad(2)) return {dx, {}, {}, {}, {}};
    const at::Tensor sums = partial.sum(0);
    return {dx, sums[0], sums[1], {}, {}};
  }
};

}  // namespace

bool training_kernels_apply(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors) {
  bool recorded;
  return !engine.reference && at::GradMode::is_enabled() && engine_pass_tensors(tensors, recorded) &&
         recorded;
}

at::Tensor trained_gelu(const EngineOptions& engine, const at::Tensor& x) {
  if (!training_kernels_apply(engine, {&x})) return at::gelu(full_precision(x));
  return Gelu::apply(x, engine);
}

at::Tensor trained_layer_norm(const EngineOptions& engine, const at::Tensor& x, const at::Tensor& gamma,
                              const at::Tensor& beta, double eps) {
  return LayerNorm::apply(x, gamma, beta, eps, engine);
}

at::Tensor trained_softmax(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                           double scale) {
  // Autograd functions take no undefined inputs: no mask is an empty one.
  return ScaledSoftmax::apply(
      logits, valid.defined() ? valid : at::empty({0}, logits.options().dtype(at::kBool)), scale, engine);
}

}  // namespace translution
