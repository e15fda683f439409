#pragma once
// The engine options an autograd node's backward computes under: the ones its
// forward was given, kept in the node's saved data (the bfloat16 weight copies
// are for forwards without gradients and are not kept).
#include <torch/csrc/autograd/custom_function.h>

#include "util/engine_options.h"

namespace translution {

void keep_options(torch::autograd::AutogradContext* ctx, const EngineOptions& options);
EngineOptions kept_options(torch::autograd::AutogradContext* ctx);

}  // namespace translution
