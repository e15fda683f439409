#include "train/graphed_train_step.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

GraphedTrainStep::GraphedTrainStep(DeviceStep& step, const at::Tensor& images, const at::Tensor& labels) {
  if (!cuda_graphs_supported()) throw Error("CUDA graphs need a CUDA build of LibTorch 2 or later");
  if (!images.is_cuda()) throw Error("internal: a graphed training step runs on a CUDA device");
  images_ = images.clone();
  labels_ = labels.clone();
  step.set_lr(0, false);  // the warm-ups and the capture change nothing
  // Three warm-ups: the autograd engine's device thread, the operators' constants and
  // the allocator's blocks for every tensor of a step exist before capture.
  graph_ = std::make_unique<CudaGraph>(images.device(), 3, [&] { report_ = step.run(images_, labels_); });
}

const at::Tensor& GraphedTrainStep::run(const at::Tensor& images, const at::Tensor& labels) {
  images_.copy_(images);
  labels_.copy_(labels);
  graph_->replay();
  return report_;
}

}  // namespace translution
