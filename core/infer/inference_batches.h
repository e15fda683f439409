#pragma once
// Forwards without gradients over many images (sweeps, shift metrics): how many images one forward
// takes. On the CPU a model whose offset matrices are most of its weights (Translution) runs one
// image per forward: the engine's one-image products (cpu/avx512_gemm.h) read each C x C' matrix
// once for that image's pairs and outrun a batch's products through the BLAS library
// (docs/performance.md, "Forwards over many images"); other models, and any model on a GPU, take
// the whole batch at once. The choice depends on the model alone, never on a timing, so a run's
// results are the same every time.
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

// Images per forward for `model` on `device`, at most `batch` (>= 1).
int64_t images_per_forward(const ViT& model, const c10::Device& device, int64_t batch);

// logits [B, classes] on the CPU of normalised images [B, channels, H, W], in forwards of
// images_per_forward(model, device, B) images under `engine`; the model must be in eval mode.
at::Tensor logits_without_gradients(const EngineOptions& engine, ViT model, const at::Tensor& images,
                                    const c10::Device& device);

}  // namespace translution
