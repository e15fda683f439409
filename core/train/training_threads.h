#pragma once
// How a CPU training run shares the two kinds of threads: OpenBLAS's, which split
// each GEMM, and the engine's helpers (util/helper_threads), which split the work
// between products. Where a step is mostly per-matrix products (Translution,
// LoR), one BLAS thread per GEMM with the engine splitting every product over the
// two cores was measured faster, and for plain attention OpenBLAS's own threads
// were (docs/benchmarks.md, section "Session 7", `bench --compare blas-threads`).
#include <optional>

#include <c10/core/Device.h>

#include "nn/vit.h"
#include "util/device.h"

namespace translution {

// While it lives, OpenBLAS threads each GEMM on one thread when `model` runs
// per-matrix products on the CPU of a two-core machine (the engine splits in two;
// more cores are left to OpenBLAS until measured), unless $OPENBLAS_NUM_THREADS
// or a forced single matrix thread (the studio) says how the cores are shared.
// OpenBLAS's thread count is process-wide: create it on the thread that owns the
// process's BLAS setting (the CLI's main thread), never beside concurrent GEMMs.
class TrainingThreads {
 public:
  TrainingThreads(const ViT& model, const c10::Device& device);
  // Whether this scope set one BLAS thread (the engine splits the products).
  bool engine_splits() const { return blas_.has_value(); }

 private:
  std::optional<ScopedBlasThreads> blas_;
};

}  // namespace translution
