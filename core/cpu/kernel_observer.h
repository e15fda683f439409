#pragma once
// Which of the engine's kernels ran, for the tests that prove a path was taken. The
// kernels report each entry; nothing listens outside the tests, and there a report
// costs a thread-local load and a branch (per thread, so that it touches no shared
// cache line).
#include <cstdint>

namespace translution {

// OffsetBatched: the offset-batched relative products (cpu/projection_algorithms.h), LibTorch's
// ops rather than a kernel of the engine's, counted so that tests can tell that path ran.
enum class Kernel { Avx512Gemm, Avx512GemmAt, PairBlocks, PairLanes, OffsetBatched, Count };

// Counts the kernels entered on the thread that made it, for its lifetime; counters
// nest (an outer one does not see what an inner one counts).
class KernelCounts {
 public:
  KernelCounts();
  ~KernelCounts();
  KernelCounts(const KernelCounts&) = delete;
  KernelCounts& operator=(const KernelCounts&) = delete;
  int64_t operator[](Kernel kernel) const { return counts_[int(kernel)]; }

 private:
  friend void report_kernel(Kernel kernel);
  int64_t counts_[int(Kernel::Count)] = {};
  KernelCounts* before_;
};

// Called by a kernel as it starts.
void report_kernel(Kernel kernel);

}  // namespace translution
