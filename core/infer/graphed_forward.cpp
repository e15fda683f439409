#include "infer/graphed_forward.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

GraphedForward::GraphedForward(const EngineOptions& engine, ViT model, const at::Tensor& example,
                               bool with_attention)
    : model_(std::move(model)) {
  if (!cuda_graphs_supported()) throw Error("CUDA graphs need a CUDA build of LibTorch 2 or later");
  if (!example.is_cuda() || example.dim() != 4 || example.size(0) != 1)
    throw Error("internal: a graphed forward takes one image [1, channels, H, W] on a CUDA device");
  at::NoGradGuard no_grad;
  input_ = example.clone();
  ViTInspection inspection;
  ViTInspection* inspect = with_attention ? &inspection : nullptr;
  // Two warm-ups make the operators' device constants (util/cuda_graph.h).
  graph_ = std::make_unique<CudaGraph>(example.device(), 2,
                                       [&] { outputs_.logits = model_->forward(engine, input_, inspect); });
  outputs_.attention = inspection.attention;
  outputs_.inputs = inspection.inputs;
}

const GraphedOutputs& GraphedForward::run(const at::Tensor& images) {
  input_.copy_(images);  // on the current stream,
  graph_->replay();      // which the replay follows
  return outputs_;
}

GraphedForward::~GraphedForward() = default;

}  // namespace translution
