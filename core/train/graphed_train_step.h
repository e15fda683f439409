#pragma once
// A whole training step on a GPU (forward, backward, the NaN guard, the clip and
// AdamW: train/device_step.h) replayed as one CUDA graph (util/cuda_graph.h).
//
// The device step reads nothing on the host and keeps its gradients, learning
// rate and index tensors in place, which is what capture needs; the warm-ups run
// with the update off (DeviceStep::set_lr), so capturing changes no weight. A
// replay reads the images and labels copied into the graph's own inputs, the
// learning rate from the step's device table (set_lr before each replay) and
// writes the report into the same tensor each time.
#include <memory>

#include <ATen/core/Tensor.h>

#include "train/device_step.h"
#include "util/cuda_graph.h"

namespace translution {

class GraphedTrainStep {
 public:
  // Captures `step` for batches shaped like `images` and `labels` (on a CUDA device).
  // Throws translution::Error where the build cannot capture or the capture fails;
  // the step can then run eagerly, its weights untouched.
  GraphedTrainStep(DeviceStep& step, const at::Tensor& images, const at::Tensor& labels);

  // Replays one step on `images` and `labels` (the captured shapes, any device) and
  // returns its report (DeviceStep::run's, overwritten by the next replay).
  const at::Tensor& run(const at::Tensor& images, const at::Tensor& labels);
  // Whether batches of this shape replay here (other shapes run eagerly).
  bool fits(const at::Tensor& images) const { return images.sizes() == images_.sizes(); }
  // The captured step: what one replay launches (CudaGraph::kernels, other_nodes).
  const CudaGraph& graph() const { return *graph_; }

 private:
  at::Tensor images_, labels_, report_;
  std::unique_ptr<CudaGraph> graph_;
};

}  // namespace translution
