#pragma once
// Which kernels OpenBLAS runs, and a hint where they are slower than they need be.
//
// Debian's OpenBLAS (0.3.21) carries kernels for many x86 CPUs and picks one set
// when it loads, unless OPENBLAS_CORETYPE names one. On the development machine
// (an AVX-512 CPU, family 6 model 143) it picks "Cooperlake", whose single-precision
// kernels are its AVX-512 ones; the shell there exports OPENBLAS_CORETYPE=Haswell,
// which keeps it on AVX2 kernels that ran a training batch's q, k, v product up to
// 1.6x slower (docs/performance.md). A value the
// user set is theirs to keep; the engine only says what it costs.
#include <string>

namespace translution {

// OpenBLAS's name for the kernels it runs ("Haswell", "Cooperlake", ...), or an
// empty string where the BLAS is not OpenBLAS (LibTorch with MKL, for instance).
std::string blas_core();

// A one-line hint when OpenBLAS runs its AVX2 (Haswell) kernels on a CPU with
// the AVX-512 subsets its SkylakeX kernels need, saying how to get those;
// otherwise empty. coretype_variable is $OPENBLAS_CORETYPE (null when unset).
std::string avx2_blas_hint(bool cpu_has_skylakex_subsets, const std::string& core, const char* coretype_variable);
// The same for this process.
std::string avx2_blas_hint();

}  // namespace translution
