#include "cpu/inference_passes.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "cpu/layer_norm_rows.h"
#include "cpu/training_passes.h"
#include "util/engine_options.h"
#include "util/full_precision.h"

namespace translution {

bool engine_pass_tensors(std::initializer_list<const at::Tensor*> tensors, bool& recorded) {
  // With LibTorch's intra-op threads asked for ($TRANSLUTION_THREADS), its ops use them; these passes would
  // not.
  if (at::get_num_threads() > 1) return false;
  at::ScalarType type = at::kFloat;
  bool first = true;
  recorded = false;
  for (const at::Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (first) {
      type = t->scalar_type();
      first = false;
    }
    if (!t->is_cpu() || !t->is_contiguous() || t->scalar_type() != type) return false;
    recorded = recorded || t->requires_grad();
  }
  return type == at::kFloat || type == at::kDouble;
}

bool fused_inference_applies(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors) {
  bool recorded;
  return !engine.reference && engine_pass_tensors(tensors, recorded) &&
         !(recorded && at::GradMode::is_enabled());
}

at::Tensor normalize(const EngineOptions& engine, torch::nn::LayerNorm& layer, const at::Tensor& x) {
  const auto& shape = layer->options.normalized_shape();
  const at::Tensor &gamma = layer->weight, &beta = layer->bias;
  if (shape.size() != 1 || x.dim() < 1 || x.size(-1) != shape[0] || x.numel() == 0)
    return layer->forward(full_precision(x));
  if (gamma.defined() && beta.defined() && training_kernels_apply(engine, {&x, &gamma, &beta}))
    return trained_layer_norm(engine, x, gamma, beta, layer->options.eps());
  if (!fused_inference_applies(engine, {&x, &gamma, &beta})) return layer->forward(full_precision(x));
  at::Tensor y = at::empty_like(x);
  const int64_t n = shape[0], rows = n ? x.numel() / n : 0;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "normalize", [&] {
    layer_norm_rows<scalar_t>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, n,
                              gamma.defined() ? gamma.data_ptr<scalar_t>() : nullptr,
                              beta.defined() ? beta.data_ptr<scalar_t>() : nullptr, layer->options.eps());
  });
  return y;
}

}  // namespace translution
