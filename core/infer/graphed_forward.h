#pragma once
// One image's forward on a GPU, replayed as a CUDA graph.
//
// A ViT forward at batch 1 is a few hundred small kernels; launched one by one
// from the host they cost more than their arithmetic (docs/performance.md, "GPU
// and CUDA graphs"). A CUDA graph records the launches once, at a fixed input shape,
// and replays them with one call. The forward must then touch no host memory and
// never wait on the device: the operators keep their index tensors on the device
// (cpu/projection_algorithms.cpp's entry_of_rows, the LoR reassociation constants).
//
// The graph reads its input from, and writes its outputs to, the same device
// tensors on every replay, so a caller copies what it keeps before the next run.
// Available with a CUDA build of LibTorch 2 or later (util/cuda_graph.h's
// cuda_graphs_supported()).
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/vit.h"
#include "util/cuda_graph.h"
#include "util/engine_options.h"

namespace translution {

// The captured forward's outputs: views of the graph's own memory.
struct GraphedOutputs {
  at::Tensor logits;                  // [1, classes]
  std::vector<at::Tensor> attention;  // per layer: [1, heads, N, N] (with attention)
  std::vector<at::Tensor> inputs;     // per layer: [1, N, C] (with attention)
};

class GraphedForward {
 public:
  // Captures model->forward under `engine` for images like `example` ([1, channels, H, W]
  // on the model's CUDA device), with every layer's attention when `with_attention`.
  // Throws translution::Error when the build cannot capture or the capture fails
  // (the model is then unchanged and can run eagerly).
  GraphedForward(const EngineOptions& engine, ViT model, const at::Tensor& example, bool with_attention);
  ~GraphedForward();
  GraphedForward(const GraphedForward&) = delete;
  GraphedForward& operator=(const GraphedForward&) = delete;

  // Copies `images` (the captured shape, any device) into the graph's input and
  // replays it. Not thread-safe: one caller at a time.
  const GraphedOutputs& run(const at::Tensor& images);
  // The captured forward: what one replay launches (CudaGraph::kernels, other_nodes).
  const CudaGraph& graph() const { return *graph_; }

 private:
  ViT model_;
  at::Tensor input_;
  GraphedOutputs outputs_;
  std::unique_ptr<CudaGraph> graph_;
};

}  // namespace translution
