#pragma once
// The memory a ViT needs, from its config alone and at once for any size: its
// weights, the peak of a forward without gradients (inference) and the peak of a
// training step (forward, backward, AdamW), on the CPU or on a CUDA device, for
// the algorithm the engine runs there. Nothing is allocated and no pair table is
// built; sizes are counted in double precision, so a config far too large for
// LibTorch still gets a number instead of an overflow. The formula and its
// measured error: docs/architecture.md, "Memory before allocating".
#include <cstdint>

#include "nn/vit_config.h"
#include "util/engine_options.h"

namespace translution {

enum class MemoryDevice { Cpu, Cuda };

// Where the run happens, as far as the algorithm the engine picks depends on it.
struct MemoryTarget {
  MemoryDevice device = MemoryDevice::Cpu;
  // CPU: whether it runs AVX-512, where LoR's narrow pair products run across the
  // vector lanes and keep no pair rows for backward (cpu/pair_lanes.h).
  bool avx512 = false;
  // CPU: its cores; on two, a model whose weights take at most 64 MiB splits each
  // training batch in two (train/training_threads.h).
  int cores = 1;
  // Training: the step runs LibTorch's ops under autocast to bfloat16 (--precision
  // bf16-autocast), where most tensors it keeps are bfloat16.
  bool bf16_autocast = false;
};

// The target as this machine runs it.
MemoryTarget memory_target(MemoryDevice device);

// Bytes by part; total() is the estimated peak (CPU: resident set; CUDA: the
// caching allocator's peak of allocated bytes).
struct MemoryEstimate {
  double weights = 0;    // parameters x 4 B (fp32)
  double gradients = 0;  // training: the parameters' gradients alive at the peak
  double optimizer = 0;  // training: AdamW's two moments, 2 x weights
  // Tensors besides: saved for backward, the working set at the peak, and the [N, N] pair
  // tables every block but plain self-attention builds with the model.
  double activations = 0;
  double baseline = 0;  // CPU: the process itself (LibTorch, the BLAS); CUDA: cuBLAS's workspace
  double total() const { return weights + gradients + optimizer + activations + baseline; }
};

// One forward without gradients of `batch` images (a prediction, evaluation).
MemoryEstimate estimate_inference(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                                  const MemoryTarget& target);

// One training step of `batch` images; `recompute`: backward recomputes the pair
// rows of relative projections instead of keeping them (train --recompute). On a
// GPU or on LibTorch's ops (engine.reference) the step is the device step, whose
// gradients live for the whole run (train/device_step.h).
MemoryEstimate estimate_training(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                                 bool recompute, const MemoryTarget& target);

// The same on this machine's CPU, or on a CUDA device.
inline MemoryEstimate estimate_inference(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                                         MemoryDevice device) {
  return estimate_inference(engine, config, batch, memory_target(device));
}
inline MemoryEstimate estimate_training(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                                        bool recompute, MemoryDevice device) {
  return estimate_training(engine, config, batch, recompute, memory_target(device));
}

const char* memory_device_name(MemoryDevice device);  // "CPU", "CUDA"

}  // namespace translution
