#include "train/training_threads.h"

#include "util/helper_threads.h"

namespace translution {

TrainingThreads::TrainingThreads(const ViT& model, const c10::Device& device) {
  if (!device.is_cpu() || blas_threads_from_environment() || matrix_threads() == 1 || blas_threads() <= 1) return;
  if (free_cores() != 2 || !model->per_matrix_products()) return;
  blas_.emplace(1);
}

}  // namespace translution
