#include "train/release_gradients.h"

namespace translution {

void release_gradients(torch::optim::Optimizer& optimizer) {
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) p.mutable_grad() = at::Tensor();
}

}  // namespace translution
