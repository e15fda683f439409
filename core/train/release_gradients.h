#pragma once
// Forgets every parameter's gradient before a training step, as PyTorch's
// zero_grad() does by default from 2.0 on (1.13's, which the CPU build links,
// zeroes them in place, so the engine does not call it). Backward
// then hands each parameter the gradient tensor it just computed: no buffer is
// zeroed and accumulated into, and no gradient of a layer not yet reached sits
// next to the activations, which is what makes the training peak
// (docs/performance.md, "Memory and `--recompute`").
// A parameter that gets no gradient in a step is skipped by the optimizer.
#include <torch/optim/optimizer.h>

namespace translution {

void release_gradients(torch::optim::Optimizer& optimizer);

}  // namespace translution
