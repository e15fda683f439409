#pragma once
// A forward without gradients on CPU, in fewer and larger passes. At batch 1 a
// self-attention block is seventeen LibTorch ops on 50-row tensors, and their
// dispatch, allocation and TensorIterator set-up cost about as much as the
// arithmetic (docs/performance.md, "The engine's passes instead of LibTorch's
// small ops"). Where every tensor is on the CPU,
// contiguous, float or double and nothing needs a gradient, the block runs as:
//   normalize()     LayerNorm, one pass per row;
//   linear_gelu()    fc1, bias and GELU, each core on its own columns (cpu/linear.h);
//   linear_add()     fc2, bias and the residual, likewise;
//   self_attention_core()  per head and block of rows: logits, scaled softmax
//                   and the weighted sum of values, split over the cores
//                   (nn/attention_math.h).
// Elsewhere (training, CUDA, views, LibTorch's intra-op threads on) the same
// functions are LibTorch's ops. Tests prove both paths equal (double to 1e-12,
// float to the kernels' accuracy).
#include <initializer_list>

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/normalization.h>

#include "util/engine_options.h"

namespace translution {

// Whether the engine's own passes can work on these tensors' memory (undefined
// ones are skipped): one intra-op thread, CPU, contiguous, one type, float or
// double; `recorded` says whether one of them wants a gradient. The gate of
// both kinds of passes: without gradients (below) and with them
// (cpu/training_passes.h).
bool engine_pass_tensors(std::initializer_list<const at::Tensor*> tensors, bool& recorded);

// Whether the fused passes may run on these tensors (undefined ones are skipped):
// not the reference options, one intra-op thread, no gradient wanted, CPU, contiguous, one
// type, float or double.
bool fused_inference_applies(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors);

// layer(x): LayerNorm over the last dimension (with gradients recorded, through
// cpu/training_passes where it applies).
at::Tensor normalize(const EngineOptions& engine, torch::nn::LayerNorm& layer, const at::Tensor& x);

}  // namespace translution
