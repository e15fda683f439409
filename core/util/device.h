#pragma once
// Choosing a device, and the peak-memory counters the benchmarks report.
#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include "util/engine_options.h"

namespace translution {

// "auto" (CUDA when available, else CPU), "cpu", "cuda" or "cuda:N".
// Throws translution::Error when CUDA is asked for and not there.
c10::Device parse_device(const std::string& name);
bool cuda_available();
std::string device_description(const c10::Device& device);

// Peak memory since the last reset: resident set on CPU (Linux VmHWM), the
// caching allocator's peak on CUDA. Returns -1 where it cannot be measured.
void reset_peak_memory(const c10::Device& device);
int64_t peak_memory_bytes(const c10::Device& device);
void synchronize(const c10::Device& device);
// TF32 on CUDA while this lives, when `on`: float matrix products and
// convolutions on the tensor cores with 10-bit-mantissa inputs and fp32 sums
// (precision tf32 of `translution train` and `bench`). LibTorch's setting before
// it (full fp32 by default) is restored after. No effect on the CPU.
class ScopedTf32 {
 public:
  explicit ScopedTf32(bool on);
  ~ScopedTf32();
  ScopedTf32(const ScopedTf32&) = delete;
  ScopedTf32& operator=(const ScopedTf32&) = delete;

 private:
  bool on_, cublas_before_ = false, cudnn_before_ = false;
};

// The process's resident memory now (Linux VmRSS), or -1.
int64_t resident_memory_bytes();
// The address space it holds now (Linux VmSize, what ulimit -v bounds), or -1.
int64_t address_space_bytes();

// LibTorch's intra-op threads: $TRANSLUTION_THREADS if set, else one. OpenBLAS
// runs its own thread per core inside every GEMM, and ATen's OpenMP threads
// spinning beside them cost more than they give: one intra-op thread is faster
// (docs/performance.md, "Threads on two cores").
void configure_threads();

// The studio's setting: OpenBLAS (found at run time) threads no GEMM, because the
// model slots and the trainer already run on threads of their own. With a BLAS
// that also threads each GEMM there are more spinning threads than cores, and
// they wait on each other: with one core busy, a canvas change takes several times
// as long as with one BLAS thread (docs/performance.md, "Threads on two cores").
// $OPENBLAS_NUM_THREADS, when set, wins. Returns false where the BLAS is not OpenBLAS.
bool configure_concurrent_blas();

// How a process runs its models: one at a time (the command line: a command's run
// may take every core), or several side by side on threads of their own (the studio:
// its model slots and training runs compute at the same time).
enum class ProcessModels { OneAtATime, SideBySide };

// What every process of the engine sets before any model exists, the same for the
// command line and the studio: LibTorch's intra-op threads (configure_threads) and,
// for models side by side, one OpenBLAS thread per GEMM (configure_concurrent_blas).
// Returns the options its models start from: side by side, matrix_threads 1 (the
// models already keep the cores busy: splitting one model's products over them as
// well only adds contention); one at a time, the defaults, which a command's flags
// change. Freed memory's policy (cpu/allocator.h's keep_freed_memory) is the cpu
// layer's, set by the caller first.
EngineOptions start_process(ProcessModels models);

// Whether this CPU runs AVX-512F (the engine's own float kernels need it; x86-64 only).
bool cpu_has_avx512();

// Threads OpenBLAS gives each GEMM now, or 0 where the BLAS is not OpenBLAS.
int blas_threads();
// Whether $OPENBLAS_NUM_THREADS is set (then it wins over the engine's choices).
bool blas_threads_from_environment();

// OpenBLAS threads each GEMM on `threads` threads while this lives (nothing where
// the BLAS is not OpenBLAS). For a measurement that must use every core, such as
// the GEMM roofline, in a process that otherwise runs one thread per GEMM.
class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads);
  ~ScopedBlasThreads();
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int restore_ = 0;
};

}  // namespace translution
