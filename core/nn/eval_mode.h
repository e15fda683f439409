#pragma once
// A module in evaluation mode (dropout off) for one scope, given back the mode it had on every
// exit: the measurements that read a model stop by throwing from their progress callbacks, and a
// model left in evaluation mode would train on without dropout.
#include <torch/nn/module.h>

namespace translution {

class EvalMode {
 public:
  explicit EvalMode(torch::nn::Module& module) : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalMode() { module_.train(was_training_); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  torch::nn::Module& module_;
  bool was_training_;
};

}  // namespace translution
