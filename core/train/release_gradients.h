#pragma once
// Forgets every parameter's gradient before a training step, as PyTorch 2's
// zero_grad() does by default (LibTorch 1.13's zeroes them in place). Backward
// then hands each parameter the gradient tensor it just computed: no buffer is
// zeroed and accumulated into, and no gradient of a layer not yet reached sits
// next to the activations, which is what makes the training peak (for
// Translution ViT-A/12, batch 32: 3.64 -> 3.27 GB, docs/performance.md).
// A parameter that gets no gradient in a step is skipped by the optimizer.
#include <torch/optim/optimizer.h>

namespace translution {

void release_gradients(torch::optim::Optimizer& optimizer);

}  // namespace translution
