#pragma once
// One training step's forward and backward, split by images over the cores.
//
// Splitting every product, softmax and LayerNorm of a step in two keeps both
// cores on the same layer, but between those splits one core waits: while the
// other runs LibTorch's element-wise ops and the autograd engine's bookkeeping,
// and while it wakes up for the next split. In `perf` samples of a LoR step
// (bf16 precision) the second core idled for a quarter to a third of the step
// (docs/performance.md). The model has no batch statistics
// (LayerNorm is per token), so the images' losses are independent: each core
// can run the forward and backward of its own share of the batch, start to end,
// with every kernel on that core alone, and the two gradients summed are the
// batch's gradient (each share's loss is its sum of cross-entropies over the
// whole batch's size, so the sum is the batch's mean loss).
//
// The shares meet only in the parameters' gradients: LibTorch's gradient
// accumulator adds them under a lock, first arrival taken as is and the second
// added to it, so with two shares the sum is the same whichever comes first.
// Against one forward over the whole batch the gradients differ only in the
// order of the per-image sums (the exactness test: 1e-12 in double).
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/vit.h"
#include "util/engine_options.h"

namespace translution {

struct ForwardBackward {
  at::Tensor logits;  // [B, classes], detached
  double loss = 0;    // mean cross-entropy over the batch
  int threads = 1;    // how many threads the shares ran on
};

// Forward, mean cross-entropy against `labels` and backward, the gradients left
// in the parameters' grads (accumulated into what is there). With `shares` > 1
// (CPU tensors only; a batch smaller than `shares` takes fewer) the images split
// into that many contiguous shares, each forward and backward on its own core
// (cpu/helper_threads.h's helpers, each share under a copy of `engine` with
// matrix_threads 1; where the helpers are busy with another caller the shares run
// one after another on this thread). One share runs under `engine` as given.
// `after_forward`, where given, runs on the calling thread between its share's
// forward and backward (bench's phase timing). A share whose loss is not finite
// skips its backward (the batch's loss is then not finite either, and no NaN
// gradient is left behind). A share's exception is rethrown; the other shares'
// gradients may be in already.
// The images of each share forward_backward splits a CPU batch into (at most
// `shares`, at least one share; contiguous, sizes differing by at most one).
std::vector<int64_t> batch_share_sizes(int64_t batch, int shares);

ForwardBackward forward_backward(const EngineOptions& engine, ViT& model, const at::Tensor& images,
                                 const at::Tensor& labels, int shares,
                                 const std::function<void()>& after_forward = {});

}  // namespace translution
