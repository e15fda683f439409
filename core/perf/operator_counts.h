#pragma once
// How many LibTorch operators a training step runs: on a GPU each is at least one
// kernel launch, and a step of small kernels costs its launches, not its work.
// Counted on the CPU from LibTorch's operator observers (ATen's RecordFunction):
// leaf operators that compute, so neither an operator's nested calls nor views,
// reshapes and bare allocations (docs/performance.md: the list). The step is the
// path a GPU takes: LibTorch's ops everywhere (EngineOptions::reference), the
// projection algorithm as given, and AdamW's multi-tensor step.
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "nn/vit_config.h"
#include "util/engine_options.h"

namespace translution {

struct OperatorCounts {
  int64_t forward = 0, backward = 0, optimizer = 0;
  int64_t host_syncs = 0;  // aten::_local_scalar_dense (a tensor's value read on the host)
  // Operators whose output size depends on values (aten::nonzero, masked_select, unique):
  // each waits for the device, and a CUDA graph cannot hold one.
  int64_t data_dependent = 0;
  int64_t index_plans_made = 0;                // offset-bucket plans made during the count (cache misses)
  std::map<std::string, int64_t> by_operator;  // name -> count, over the three phases
  std::set<std::string> seen;                  // every operator begun, at any depth, counted or not
  int64_t total() const { return forward + backward + optimizer; }
};

// Every field of a minus b (the work one block adds: a model one block deeper less this one).
OperatorCounts operator-(const OperatorCounts& a, const OperatorCounts& b);

struct TrainingOperatorCounts {
  OperatorCounts step;   // one training step: forward, cross-entropy, backward, guard, clip, AdamW
  OperatorCounts block;  // one block of it, every token through it (forward and backward)
};

// One training step of `config` at `batch` on the CPU, counted after one uncounted
// step (which makes the plans and caches a first step makes), under `engine` with
// `reference` set; then the same for a model one block deeper, whose difference is
// one block's count.
TrainingOperatorCounts count_training_operators(const EngineOptions& engine, const ViTConfig& config,
                                                int64_t batch);

// One forward of `config` at `batch` without gradients, as the studio predicts (with every
// layer's attention and its input when `with_attention`), counted after one uncounted
// forward, under `engine` with `reference` set. Its operators are all `forward`.
OperatorCounts count_inference_operators(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                                         bool with_attention);

}  // namespace translution
