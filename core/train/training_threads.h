#pragma once
// How a CPU training run shares the cores, one of three ways (docs/performance.md,
// "Threads on two cores"):
// OpenBLAS's own threads splitting each GEMM; one BLAS thread per GEMM with the
// engine splitting every product over the two cores (cpu/helper_threads); and
// the batch split by images, each core running the forward and backward of its
// share alone (train/forward_backward.h), which leaves no core waiting between splits.
#include <cstdint>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "nn/vit.h"
#include "util/device.h"
#include "util/engine_options.h"

namespace translution {

// EngineOptions::batch_split: whether a training step splits its batch over the cores: auto (a CPU
// run on two free cores with OpenBLAS, for a model whose weights take at most
// kSplitWeightLimitBytes, 64 MiB), on (any model, where a split is possible) or off.
// Each half of a split batch reads every weight, so the split doubles the weight
// traffic of a step: models with small weights (self-attention's and LoR's ViT-A/12)
// gain from it; Translution's gains little, and its peak would pass its 3 GB goal, so
// its memory margin decides (docs/performance.md, "Threads on two cores").
constexpr int64_t kSplitWeightLimitBytes = int64_t(64) << 20;
// What a split needs, for errors that name it.
inline constexpr const char* kBatchSplitNeeds =
    "a CPU run that can split its batch (two free cores, OpenBLAS, no --matrix-threads count, no "
    "$OPENBLAS_NUM_THREADS)";

// While it lives, OpenBLAS threads each GEMM on one thread when the run splits its
// batch over the cores, or when `model` runs per-matrix products on the CPU of a
// two-core machine (the engine splits in two; on more cores OpenBLAS keeps its
// threads), unless $OPENBLAS_NUM_THREADS or a forced single matrix thread
// (the studio) says how the cores are shared. OpenBLAS's thread count is
// process-wide: create it on the thread that owns the process's BLAS setting
// (the CLI's main thread), never beside concurrent GEMMs.
class TrainingThreads {
 public:
  // Decides by `engine` (its batch_split and matrix_threads), read here once.
  // Throws an Error where the split is asked for (BatchSplit::On) but not possible here.
  TrainingThreads(const EngineOptions& engine, const ViT& model, const c10::Device& device);
  // Whether the engine splits each product over the cores with one BLAS thread
  // (per-matrix models, where the batch is not split).
  bool engine_splits() const { return engine_rule_ && !split_; }
  // The shares a step's batch splits into (forward_backward's `shares`): the free
  // cores where the batch is split, else 1.
  int batch_shares() const { return split_ ? cores_ : 1; }
  // Split or not from the next step on (bench --compare split-batch; on the thread
  // that made this, between steps). Only where a split is possible here.
  void set_split(bool split);
  bool split_possible() const { return cores_ > 1; }

 private:
  void apply();

  bool engine_rule_ = false;  // one BLAS thread for the engine's splits, without a batch split
  int cores_ = 1;             // the shares a split would use; 1 where none is possible
  bool split_ = false;
  std::optional<ScopedBlasThreads> blas_;
};

}  // namespace translution
