#pragma once
// `translution bench`: time a model's inference or training step and put the
// result next to what this machine can do at best, measured in the same run.
#include <functional>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "nn/vit_config.h"
#include "util/engine_options.h"

namespace translution {

// What the hardware reached on a plain fp32 GEMM and a large copy, just now.
struct Roofline {
  double gemm_gflops = 0;    // 2048^3 matmul (1024^3 would flatter nothing here), the faster library's
  std::string gemm_library;  // whose: "aten" (LibTorch's at::mm: its BLAS) or "onednn" (cpu/blas_gemm.h)
  double bandwidth_gbs = 0;  // bytes read + written per second by a 256 MB copy
  // GPU only: an 8192^3 bf16 matmul, the tensor cores' rate that bf16-autocast steps are
  // measured against; -1 on the CPU.
  double bf16_gemm_gflops = -1;
  // CPU only: every core's fp32 FMA rate with no memory traffic (util/fma_peak.h),
  // the ceiling no kernel passes; -1 on a GPU, or where it cannot be measured.
  double fma_peak_gflops = -1;
  std::string fma_isa;
};
Roofline measure_roofline(const c10::Device& device);

struct BenchOptions {
  ViTConfig config;
  // How the run computes. Its precision in training: the dense layers' products; in
  // inference, bf16 reads the offset matrices from bfloat16 copies the run makes
  // (cpu/bf16_weights.h; bf16_weights here is not read).
  EngineOptions engine;
  std::string mode = "infer";  // "infer": forward without grad; "train": forward, backward, AdamW step
  // Training: "host" (forward_backward, the NaN checks read as they come, the optimizer's step),
  // "device" (train/device_step.h: queued whole, its report read once after it) or "graphed"
  // (the device step replayed as a CUDA graph, train/graphed_train_step.h).
  std::string train_step = "host";
  bool autocast_bf16 = false;  // the device step's forward under autocast to bfloat16
  int64_t batch = 1;
  c10::Device device{c10::kCPU};
  int warmup = 2;
  int steps = 10;
  // A/B within one process, for a noisy machine: when set, steps alternate between
  // the path as configured and the alternative: the alternative's steps run under
  // `alternative` (a setting of the options), or `switch_path` switches a setting
  // outside them (true: the alternative). Both medians are reported; `compare` names
  // it. compare "split-batch" needs neither: run_benchmark switches its own training
  // threads (train/training_threads.h). The optimizer is built once, under `engine`.
  std::string compare;
  std::optional<EngineOptions> alternative;
  std::function<void(bool alternative)> switch_path;
};

struct BenchResult {
  BenchOptions options;
  int64_t parameters = 0;
  double ms_per_step = 0;               // median over the timed steps
  double ms_per_step_alternative = -1;  // with options.compare: median of the alternative's steps
  double ms_min = 0;
  double forward_ms = -1, backward_ms = -1, optimizer_ms = -1;  // training: medians per phase
  double images_per_second = 0;
  int64_t peak_memory_bytes = -1;    // resident set (CPU) or allocator peak (CUDA) during the run
  int64_t estimated_peak_bytes = 0;  // what nn/memory_estimate.h predicts for that peak
  double exact_flops_per_image = 0;  // forward, 2 x exact multiply-adds
  double step_flops = 0;             // counted work of one step (training: 3x forward)
  Roofline roofline;
  double floor_ms = 0;             // max(work / GEMM rate, weight traffic / bandwidth)
  double fraction_of_floor = 0;    // floor_ms / ms_per_step
  double achieved_gflops() const;  // the step's counted work per second
  // achieved_gflops over the cores' FMA peak (-1: no peak measured).
  double fraction_of_fma_peak() const;
  double cpu_steal = -1;  // share of the machine's CPU time a hypervisor took during the timed steps
                          // (util/cpu_steal.h; -1: unknown or too short to count)
  int threads = 1;
  std::string algorithm;   // how relative projections were computed
  std::string train_step;  // training: host, device or graphed (BenchOptions)
  // A graphed step's kernels and other nodes: what one replay launches (-1: not graphed).
  int64_t graph_kernels = -1, graph_other_nodes = -1;
  bool recompute = false;           // pair rows recomputed in backward
  bool cls_only_last_block = true;  // the last block for the CLS query alone (nn/vit.h)
  bool reassociation = true;  // self-attention's and LoR's CLS query in a batch meets the unprojected inputs
                              // (nn/self_attention.h)
  bool split_batch = false;   // training: the batch split over the cores (train/forward_backward.h)
  std::string kernels = "engine";  // the engine's kernels, or "reference": LibTorch's ops (EngineOptions)
  bool blas_gemm = true;           // per-matrix products straight to BLAS (else at::mm)
  bool avx512_gemm = true;         // small per-matrix products on the engine's kernel (cpu/avx512_gemm.h)
  bool onednn_sgemm =
      false;  // float products of one thread each on oneDNN where large enough (cpu/blas_gemm.h)
  std::string pair_kernels = "blocked";  // where the per-pair arithmetic ran (cpu/pair_kernels.h)
  bool fused_inference = true;  // a forward without gradients in the engine's passes (cpu/inference_passes.h)
  bool grouped_projections = true;  // linear_each with gradients as one node (cpu/linear.h)
  bool training_kernels =
      true;  // GELU, LayerNorm, softmax, self-attention with gradients in the engine's passes
  std::string precision = "fp32";  // training: the dense layers' products (cpu/bf16_gemm.h); inference: the
                                   // offset matrices read as bfloat16 (cpu/bf16_weights.h)
  int matrix_threads = 0;          // threads sharing the per-matrix GEMMs (0: by shape)
  int blas_threads = 0;            // OpenBLAS threads per GEMM (0: not OpenBLAS)
  std::string blas_core;           // OpenBLAS's kernels (cpu/blas_kernels.h; empty: not OpenBLAS)
  std::string
      bf16_kernel;  // training in (or compared with) bf16: cpu/bf16_gemm's kernel, amx | avx512-bf16; else ""
  std::string freed_memory;  // cpu/allocator.h's policy
  std::string device_name;
  std::string to_json() const;
};

using BenchProgress = std::function<void(int step, int total)>;
BenchResult run_benchmark(const BenchOptions& options, const BenchProgress& progress = {});

}  // namespace translution
