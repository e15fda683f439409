#pragma once
// The element-wise steps of a forward that records gradients, GELU, LayerNorm
// and the attention's scaled softmax, as autograd functions over the engine's
// own vectorised passes (cpu/vector_math), split over the cores (self-attention's
// per-head work, likewise, is nn/attention_math's). LibTorch's CPU ops for them
// run on one core (one intra-op thread, util/device.h) while OpenBLAS's second
// thread waits (docs/performance.md, "The engine's passes instead of LibTorch's
// small ops"). Forward keeps what LibTorch's ops keep (the GELU's input;
// LayerNorm's input and each row's mean and 1 / std; the softmax's output), so
// memory is unchanged. Where they do not apply (CUDA, non-contiguous tensors,
// half precision, LibTorch's intra-op threads on, nothing recording gradients,
// the reference options) the same functions are LibTorch's ops. Tests prove both paths
// equal, forward and backward (double to rounding, float to the kernels'
// accuracy).
#include <initializer_list>

#include <ATen/core/Tensor.h>

#include "util/engine_options.h"

namespace translution {

// Whether the passes may run on these tensors (undefined ones are skipped):
// not the reference options, one intra-op thread, gradients recorded for one of them, CPU,
// contiguous, one type, float or double. (Without gradients cpu/inference_passes
// runs its own passes.)
bool training_kernels_apply(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors);

// gelu(x), LibTorch's exact (erf) GELU, with its gradient: the pass where
// training_kernels_apply(engine, {&x}), else at::gelu. Backward splits as `engine` says.
at::Tensor trained_gelu(const EngineOptions& engine, const at::Tensor& x);

// LayerNorm of x over its last dimension (of gamma's and beta's length), with
// its gradients. Needs training_kernels_apply(engine, {&x, &gamma, &beta}).
at::Tensor trained_layer_norm(const EngineOptions& engine, const at::Tensor& x, const at::Tensor& gamma,
                              const at::Tensor& beta, double eps);

// The arithmetic of trained_softmax's forward, without gradients: a copy of
// logits, each row's scaled, masked softmax in place, the rows over `parts`
// (nn/attention_math's forward without gradients runs it on one).
at::Tensor softmax_rows(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                        double scale, int parts);

// softmax(scale logits) over the last dimension with the entries where `valid`
// (a [queries x keys] bool matrix, or undefined: none) is false at -infinity,
// with its gradient. Needs training_kernels_apply(engine, {&logits}) and such a mask.
at::Tensor trained_softmax(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                           double scale);

}  // namespace translution
