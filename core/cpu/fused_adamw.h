#pragma once
// AdamW whose CPU step makes one pass over each parameter instead of LibTorch's
// nine (weight decay, two per moment, sqrt, divide, epsilon, update, each a full
// read and write). For a model as large as Translution ViT-A that is a large share
// of a training step (docs/performance.md, "Paths that were measured and
// removed"). Same options, same state
// (AdamWParamState), same serialization: checkpoints written with either load in
// either. Tensors it cannot fuse (CUDA, half precision, amsgrad, sparse or
// non-contiguous) go through LibTorch's own step, or, where they are dense (CUDA
// memory), multi_tensor_step.
#include <memory>
#include <vector>

#include <torch/optim/adamw.h>

#include "util/engine_options.h"

namespace translution {

class FusedAdamW : public torch::optim::AdamW {
 public:
  // `engine` says how each step's pass splits over the cores.
  FusedAdamW(std::vector<at::Tensor> params, const torch::optim::AdamWOptions& options,
             const EngineOptions& engine = {})
      : torch::optim::AdamW(std::move(params), options), engine_(engine) {}
  at::Tensor step(LossClosure closure = nullptr) override;
  // The same update over all parameters at once, a few LibTorch multi-tensor
  // (_foreach_) ops per group and step count instead of nine ops per parameter: few
  // kernel launches on a GPU. For dense gradients without amsgrad; else LibTorch's
  // step. step() takes it where the fused CPU pass cannot run.
  at::Tensor multi_tensor_step(LossClosure closure = nullptr);

 private:
  bool can_fuse() const;
  bool can_step_multi_tensor() const;
  torch::optim::AdamWParamState& state_of(const at::Tensor& p);
  EngineOptions engine_;
};

// `p`'s state in `optimizer`, made where missing (zero moments, step 0) as LibTorch's step makes it.
torch::optim::AdamWParamState& adamw_state(torch::optim::AdamW& optimizer, const at::Tensor& p);

// The optimizer a training run uses: FusedAdamW, or LibTorch's own AdamW under
// the reference options.
std::unique_ptr<torch::optim::AdamW> make_adamw(const EngineOptions& engine, std::vector<at::Tensor> params,
                                                const torch::optim::AdamWOptions& options);

}  // namespace translution
