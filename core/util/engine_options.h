#pragma once
// How the engine computes, as one value. Every setting gives the same results
// (to rounding) by different work; none changes what a model is. The defaults
// are the fast paths; `reference` is the plain one (LibTorch's ops), which the
// tests use as their oracle and `translution bench --kernels reference` times.
//
// Whoever runs a model owns its options (the predictor, the trainer, the bench,
// a test) and hands them to every forward and to the optimizer: nothing in the
// engine keeps options of its own, so two models with different options run side
// by side in one process and each computes what it computes alone. Backward
// passes compute under the options their forward was given (each autograd node
// keeps them: util/kept_options.h). Two settings belong to libraries and are
// process-wide there, not here: OpenBLAS's thread count (util/device.h's
// ScopedBlasThreads) and LibTorch's TF32 flag for CUDA products (ScopedTf32).
#include <string>

namespace translution {

// How relative projections are computed (cpu/projection_algorithms.h): Auto picks by shape
// and device; the others force one path (all exact). PerMatrix: one product per offset
// matrix. AllTokens: every token by every matrix in one product, the pairs' rows picked.
// OffsetBatched: the pairs grouped by offset and the offsets bucketed by pair count
// (cpu/offset_buckets.h), one batched product per bucket, in LibTorch's ops alone.
enum class ProjectionAlgorithm { Auto, PerMatrix, AllTokens, OffsetBatched };

// Whether a CPU training step splits its batch over the cores (train/training_threads.h).
enum class BatchSplit { Auto, On, Off };

// Which precision a training step's large products use where gradients are
// recorded: fp32, or bf16 (cpu/bf16_gemm.h: every dense layer's forward and both
// gradients, and Translution's offset-matrix products; the rest stays fp32, as
// does a forward without gradients).
enum class DensePrecision { Fp32, Bf16 };

class Bf16Weights;  // cpu/bf16_weights.h

struct EngineOptions {
  // LibTorch's ops everywhere instead of the engine's CPU kernels: products through
  // at::mm rather than straight to the BLAS, oneDNN or the AVX-512 row kernels; the
  // per-pair arithmetic, LayerNorm, GELU and softmax as ATen expressions; one
  // autograd node per linear layer; LibTorch's AdamW.
  bool reference = false;
  // Threads that share one model's work; 0 decides by shape (cpu/helper_threads.h).
  // The studio uses 1: its model slots already keep the cores busy; so does each
  // share of a training step split by images (train/forward_backward.h).
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
  DensePrecision precision = DensePrecision::Fp32;
  // bfloat16 copies of the offset matrices that a forward without gradients reads
  // instead of the fp32 banks (cpu/bf16_weights.h), or none. Owned by the runner,
  // which keeps them alive while these options are in use.
  const Bf16Weights* bf16_weights = nullptr;
};

// The options with one change:
//   vit->forward(x, with(engine, &EngineOptions::reference, true));
template <typename T>
EngineOptions with(EngineOptions options, T EngineOptions::*field, T value) {
  options.*field = value;
  return options;
}

ProjectionAlgorithm parse_projection_algorithm(
    const std::string& name);  // auto|per-matrix|all-tokens|offset-batched
const char* projection_algorithm_name(ProjectionAlgorithm algorithm);
BatchSplit parse_batch_split(const std::string& name);  // auto|on|off, else an Error naming the value

}  // namespace translution
