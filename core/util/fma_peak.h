#pragma once
// The CPU's arithmetic ceiling for fp32, measured: multiply-adds per second with
// every core running a loop that touches no memory and keeps enough independent
// FMA chains in flight to fill the vector units. A GEMM reference (perf/benchmark.h)
// tells what a well-tuned library reaches; this tells how far that is from the
// silicon, so a target beyond it is known to be beyond any kernel (docs/performance.md).
#include <string>

namespace translution {

struct FmaPeak {
  double gflops = -1;  // fp32 FLOP/s over all cores (an FMA counts 2), -1 where not measured
  std::string isa;     // the vector width measured: "avx512", "avx2", or "" (not x86, or neither)
};

// Runs `cores` threads at once, each for about `seconds`, and keeps the best of
// three rounds (the slow minutes of a shared machine lower every round alike).
FmaPeak measure_fma_peak(int cores, double seconds = 0.02);

}  // namespace translution
