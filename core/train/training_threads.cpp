#include "train/training_threads.h"

#include <atomic>

#include "cpu/helper_threads.h"
#include "util/error.h"

namespace translution {
TrainingThreads::TrainingThreads(const EngineOptions& engine, const ViT& model, const c10::Device& device) {
  if (!device.is_cpu() || blas_threads_from_environment() || blas_threads() == 0) {
    if (engine.batch_split == BatchSplit::On)
      throw Error(std::string("--split-batch on needs ") + kBatchSplitNeeds);
    return;
  }
  // One BLAS thread and the engine's own splits, where the products are per matrix (docs/performance.md).
  engine_rule_ =
      matrix_threads(engine) != 1 && blas_threads() > 1 && free_cores() == 2 && model->per_matrix_products();
  // The batch split: two free cores, and nothing forcing how products split (the studio forces 1).
  if (matrix_threads(engine) == 0 && free_cores() == 2) cores_ = 2;
  const BatchSplit asked = engine.batch_split;
  const bool small_weights = model->parameter_count() * int64_t(sizeof(float)) <= kSplitWeightLimitBytes;
  if (asked == BatchSplit::On && cores_ < 2)
    throw Error(std::string("--split-batch on needs ") + kBatchSplitNeeds);
  split_ = cores_ > 1 && (asked == BatchSplit::On || (asked == BatchSplit::Auto && small_weights));
  apply();
}

void TrainingThreads::set_split(bool split) {
  if (split && cores_ < 2) throw Error("this run cannot split its batch over the cores");
  split_ = split;
  apply();
}

void TrainingThreads::apply() {
  // The shares' GEMMs run side by side, one per core: one BLAS thread each.
  if (split_ || engine_rule_) {
    if (!blas_) blas_.emplace(1);
  } else {
    blas_.reset();
  }
}

}  // namespace translution
