#pragma once
// Which kernels OpenBLAS runs, and a hint where they are slower than they need be.
//
// An OpenBLAS built for many x86 CPUs (as Debian's is) carries kernels for each
// and picks one set when it loads, unless OPENBLAS_CORETYPE names one. On an
// AVX-512 CPU it picks a set whose single-precision kernels are AVX-512 ones;
// OPENBLAS_CORETYPE=Haswell keeps it on AVX2 kernels, which run a training
// batch's products slower (docs/performance.md, "How to measure"). A value the
// user set is theirs to keep; the engine only says what it costs.
#include <string>

namespace translution {

// OpenBLAS's name for the kernels it runs ("Haswell", "Cooperlake", ...), or an
// empty string where the BLAS is not OpenBLAS (LibTorch with MKL, for instance).
std::string blas_core();

// A one-line hint when OpenBLAS runs its AVX2 (Haswell) kernels on a CPU with
// the AVX-512 subsets its SkylakeX kernels need, saying how to get those;
// otherwise empty. coretype_variable is $OPENBLAS_CORETYPE (null when unset).
std::string avx2_blas_hint(bool cpu_has_skylakex_subsets, const std::string& core,
                           const char* coretype_variable);
// The same for this process.
std::string avx2_blas_hint();

}  // namespace translution
