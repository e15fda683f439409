#pragma once
// How a CPU training run shares the two kinds of threads: OpenBLAS's, which split
// each GEMM, and the engine's helpers (util/helper_threads), which split the work
// between products. Where a step is mostly per-matrix products (Translution,
// LoR), one BLAS thread per GEMM with the engine splitting every product over the
// cores was faster: Translution ViT-A/12 at batch 32, 2385-2430 against 2871-2894
// ms/step, no OpenBLAS worker spinning between the thousands of products; for
// plain attention OpenBLAS's own threads were (3-10% per step; docs/benchmarks.md,
// session 7, `bench --compare blas-threads`).
#include <optional>

#include <c10/core/Device.h>

#include "nn/vit.h"
#include "util/device.h"

namespace translution {

// While it lives, OpenBLAS threads each GEMM on one thread when `model` runs
// per-matrix products on the CPU, unless $OPENBLAS_NUM_THREADS or a forced
// single matrix thread (the studio) says how the cores are shared.
class TrainingThreads {
 public:
  TrainingThreads(const ViT& model, const c10::Device& device);
  // Whether this scope set one BLAS thread (the engine splits the products).
  bool engine_splits() const { return blas_.has_value(); }

 private:
  std::optional<ScopedBlasThreads> blas_;
};

}  // namespace translution
