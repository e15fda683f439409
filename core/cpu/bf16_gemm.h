#pragma once
// Mixed-precision matrix products on Intel AMX: fp32 operands rounded to
// bfloat16 (to nearest, ties to even), multiplied in 16 x 32 tiles with fp32
// sums, fp32 results. The training step's dense products are bound by the fp32
// GEMM rate (docs/performance.md, "What is still short"), and one core's tiles do
// more of them than OpenBLAS's two fp32 threads (docs/performance.md, "bfloat16
// where the CPU has it"). It changes the numbers: each product carries
// bfloat16's rounding of its inputs (8 significant bits), as under PyTorch's
// bf16 autocast, so it is opt-in (EngineOptions::precision), never the default.
#include <cstdint>
#include <string>

#include "util/engine_options.h"

namespace translution {

// Whether this CPU can run bf16_gemm: on AMX bf16 tiles where it has them and the
// kernel lets this process use them (Linux asks each process to request the tile
// state), else on AVX512-BF16 dot products (AMD Zen 4, Intel Cooper Lake: the
// same operands and fp32 sums, at about twice the fp32 FMA's multiply-adds per
// instruction; docs/performance.md). Asked once; the answer is kept.
bool bf16_gemm_available();
// Which kernel bf16_gemm runs with `tiles` asked for (Bf16Run): "amx",
// "avx512-bf16" or "none".
const char* bf16_gemm_kernel(bool tiles = true);
// Why not, in words a person can act on ("" where it is available).
std::string bf16_gemm_unavailable_reason();

// c[m x n] = op(a) op(b) in the layout of blas_gemm_strided (row-major: op(a) is
// a [m x k] with row stride lda, or a stored [k x m] and transposed when
// trans_a; op(b) is b [k x n], or b stored [n x k] when trans_b), the operands
// rounded to bfloat16, sums in fp32, plus `bias` (n floats, kept fp32) added to
// every row where given, as `run` says. Only where bf16_gemm_available() (else it
// throws an Error saying why).
struct Bf16Run {
  int parts = 1;  // cores it splits over (run_parts)
  bool tiles =
      true;  // AMX tiles where there are any (false: the AVX512-BF16 kernel, which the tests prove too)
};
void bf16_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc, Bf16Run run, const float* bias = nullptr);

// How bfloat16 work runs under `engine`: over matrix_threads(engine) when set, else
// every free core (the tiles are per core; no BLAS threads compete for them), on
// the tiles where engine.bf16_tiles.
Bf16Run bf16_run(const EngineOptions& engine);

// The bfloat16 a float rounds to, widened back to a float (what bf16_gemm
// multiplies): round to nearest, ties to even; NaN stays NaN; subnormals become
// zero (the conversion instruction flushes them).
float round_to_bf16(float x);

// fp32|bf16; bf16 throws an Error naming the reason where bf16_gemm is not
// available. valid_dense_precision_name checks the name alone (a stored config).
DensePrecision parse_dense_precision(const std::string& name);
bool valid_dense_precision_name(const std::string& name);
const char* dense_precision_name(DensePrecision precision);

}  // namespace translution
