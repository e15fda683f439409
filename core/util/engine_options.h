#pragma once
// How the engine computes, in one place. Every setting gives the same results
// (to rounding) by different work; none changes what a model is. The defaults
// are the fast paths; `reference` is the plain one (LibTorch's ops), which the
// tests use as their oracle and `translution bench --kernels reference` times.
//
// The options in force are process-wide (the engine's helper threads and a
// training step's per-core shares read them too) and are changed only for a
// scope: ScopedEngineOptions installs a set and restores the one before when it
// ends. Set them before work starts, on the thread that owns the run (the CLI's
// command, the studio's main, a test), never while another thread computes.
// Two settings are per thread and have scopes of their own: the training step's
// product precision (cpu/bf16_gemm.h, ScopedDensePrecision) and the one-core
// share of a split batch (cpu/helper_threads.h, ScopedOneCore).
#include <string>

namespace translution {

// How relative projections are computed (nn/relative_projection.h): Auto picks by shape
// and device; the others force one path (both exact).
enum class ProjectionAlgorithm { Auto, PerMatrix, AllTokens };

// Whether a CPU training step splits its batch over the cores (train/training_threads.h).
enum class BatchSplit { Auto, On, Off };

struct EngineOptions {
  // LibTorch's ops everywhere instead of the engine's CPU kernels: products through
  // at::mm rather than straight to the BLAS, oneDNN or the AVX-512 row kernels; the
  // per-pair arithmetic, LayerNorm, GELU and softmax as ATen expressions; one
  // autograd node per linear layer; LibTorch's AdamW.
  bool reference = false;
  // Threads that share one model's work; 0 decides by shape (cpu/helper_threads.h).
  // The studio uses 1: its model slots already keep the cores busy.
  int matrix_threads = 0;
  ProjectionAlgorithm projection = ProjectionAlgorithm::Auto;
  // Backward recomputes the pair-sorted q, k and v rows instead of keeping them
  // from forward: one more forward's projection products for 3 x pairs x batch x C'
  // floats less per layer.
  bool recompute_pair_rows = false;
  // The last block computes only the CLS token's output, the one the head reads
  // (false: every token's, as the equations are written).
  bool cls_only_last_block = true;
  // In a batch, the last block's CLS query of self-attention and LoR meets the
  // inputs through its own key and value projections (nn/self_attention.h).
  bool query_reassociation = true;
  BatchSplit batch_split = BatchSplit::Auto;
  // bfloat16 products on AMX tiles where the CPU has them (false: the AVX512-BF16
  // kernel, which the tests prove on such a CPU too).
  bool bf16_tiles = true;
};

// The options in force.
const EngineOptions& engine_options();

// Installs `options` for its lifetime and then restores the ones before. Scopes
// nest; end them in the reverse order of their start (as C++ scopes do).
class ScopedEngineOptions {
 public:
  explicit ScopedEngineOptions(const EngineOptions& options);
  ~ScopedEngineOptions();
  ScopedEngineOptions(const ScopedEngineOptions&) = delete;
  ScopedEngineOptions& operator=(const ScopedEngineOptions&) = delete;

 private:
  EngineOptions options_;
  const EngineOptions* before_;
};

// The options in force with one change, for a scope:
//   ScopedEngineOptions s(engine_options_with(&EngineOptions::reference, true));
template <typename T>
EngineOptions engine_options_with(T EngineOptions::*field, T value) {
  EngineOptions o = engine_options();
  o.*field = value;
  return o;
}

ProjectionAlgorithm parse_projection_algorithm(const std::string& name);  // auto|per-matrix|all-tokens
const char* projection_algorithm_name(ProjectionAlgorithm algorithm);
BatchSplit parse_batch_split(const std::string& name);  // auto|on|off, else an Error naming the value

}  // namespace translution
