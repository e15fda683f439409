#pragma once
// What a standalone timing tool in bench/ needs to link the engine's row kernel
// (core/nn/row_gemm.cpp) without LibTorch: the Fortran BLAS entry point, and the
// CPU check row_gemm asks util/device for (that file needs LibTorch, so the tool
// answers the question itself). Include it in one translation unit per tool.
#include "nn/row_gemm.h"

extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

namespace translution {
bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f"); }
}  // namespace translution
