#include "cpu/pair_matrices.h"

#include <type_traits>

#include <ATen/ATen.h>

#include "cpu/avx512_gemm.h"
#include "cpu/bf16_gemm.h"
#include "cpu/blas_gemm.h"

namespace translution {

int64_t most_rows(const std::vector<int64_t>& offset) {
  int64_t n = 0;
  for (size_t e = 0; e + 1 < offset.size(); ++e) n = std::max(n, offset[e + 1] - offset[e]);
  return n;
}

// Where the BLAS would run each product on one core, the other core would idle:
// there the matrices are split between the cores (cpu/helper_threads'
// product_parts), each product on one BLAS thread, because two BLAS threads'
// spinning workers would take the second core's time (docs/performance.md,
// "Threads on two cores").
int matrix_parts(const EngineOptions& engine, int64_t largest_gemm_rows, int64_t k, int64_t n) {
  return product_parts(engine, largest_gemm_rows * k * n);
}

at::Tensor bank_gradient_buffer(const at::Tensor& bank, const std::vector<int64_t>& offset) {
  at::Tensor dbank = at::empty_like(bank, at::MemoryFormat::Contiguous);
  for (size_t e = 0; e + 1 < offset.size(); ++e)
    if (offset[e + 1] == offset[e]) dbank.select(0, int64_t(e)).zero_();
  return dbank;
}

// Whether a bank's products run in bfloat16 (cpu/bf16_gemm.h) when training in bf16
// precision: float matrices of at least 64 x 64 (Translution's 192 x 192; LoR's
// 24 x 24 would be mostly padding in the 32-wide tiles and stay fp32).
bool bf16_bank(const at::Tensor& bank) {
  return bank.scalar_type() == at::kFloat && bank.dim() == 3 && bank.is_contiguous() && bank.size(1) >= 64 &&
         bank.size(2) >= 64;
}

// Banks of at most 32 x 32 (LoR's 24 x 24): the engine's row kernels take their
// products at any batch in less time than OpenBLAS (docs/performance.md,
// "Few-row products: the engine's row kernel").
namespace {
constexpr int64_t kNarrowBank = 32;
bool narrow_bank(int64_t C, int64_t D) { return C <= kNarrowBank && D <= kNarrowBank; }
}  // namespace

// out[m x D] = g[m x C] w[C x D]. In bf16 precision on cpu/bf16_gemm; else products of
// few rows (one image's, about 15 per matrix) in float go to the engine's kernel,
// which streams the next matrix of the loop into cache while it computes
// (cpu/avx512_gemm.h; Translution, one image: see docs/performance.md), as
// do a narrow bank's of any rows; the rest to the BLAS.
// With w16 (a bfloat16 copy of the bank, cpu/bf16_weights.h; forwards without
// gradients) every product reads w16's matrices instead of w's.
template <typename T>
void matrix_product(int64_t m, int64_t C, int64_t D, const T* g, const T* w, T* out, const T* next,
                    const Bf16Run* bf16, const Bf16Bits* w16, const Bf16Bits* next16) {
  if constexpr (std::is_same_v<T, float>) {
    if (w16)
      return avx512_gemm_bf16(m, D, C, g, C, w16, D, out, D, next16,
                              next16 ? int64_t(sizeof(Bf16Bits)) * C * D : 0);
    if (bf16) return bf16_gemm(false, false, m, D, C, g, C, w, D, out, D, {1, bf16->tiles});
    if ((m <= kAvx512GemmMostRows || narrow_bank(C, D)) && avx512_gemm_available() && avx512_gemm_width_ok(D))
      return avx512_gemm(m, D, C, g, C, w, D, out, D, next, next ? int64_t(sizeof(T)) * C * D : 0);
  }
  blas_gemm<T>(false, false, m, D, C, g, w, out);
}

// dW = G^T dS and dG = dS W^T for one matrix's rows ([m x C] and [m x D]): in bf16
// precision on cpu/bf16_gemm; a narrow bank's in float on the row kernels; else the BLAS.
template <typename T>
void matrix_gradients(int64_t m, int64_t C, int64_t D, const T* g, const T* ds, const T* w, T* dw, T* dg,
                      const Bf16Run* bf16) {
  if constexpr (std::is_same_v<T, float>) {
    if (bf16) {
      bf16_gemm(true, false, C, D, m, g, C, ds, D, dw, D, {1, bf16->tiles});
      bf16_gemm(false, true, m, C, D, ds, D, w, D, dg, C, {1, bf16->tiles});
      return;
    }
    if (narrow_bank(C, D) && avx512_gemm_available()) {
      avx512_gemm_at(C, D, m, g, C, ds, D, dw, D);
      float wt[kNarrowBank * kNarrowBank];  // W^T, so that dG is a avx512_gemm
      for (int64_t d = 0; d < D; ++d)
        for (int64_t c = 0; c < C; ++c) wt[d * C + c] = w[c * D + d];
      return avx512_gemm(m, C, D, ds, D, wt, C, dg, C);
    }
  }
  blas_gemm<T>(true, false, C, D, m, g, ds, dw);
  blas_gemm<T>(false, true, m, C, D, ds, w, dg);
}

template void matrix_product<float>(int64_t, int64_t, int64_t, const float*, const float*, float*,
                                    const float*, const Bf16Run*, const Bf16Bits*, const Bf16Bits*);
template void matrix_product<double>(int64_t, int64_t, int64_t, const double*, const double*, double*,
                                     const double*, const Bf16Run*, const Bf16Bits*, const Bf16Bits*);
template void matrix_gradients<float>(int64_t, int64_t, int64_t, const float*, const float*, const float*,
                                      float*, float*, const Bf16Run*);
template void matrix_gradients<double>(int64_t, int64_t, int64_t, const double*, const double*, const double*,
                                       double*, double*, const Bf16Run*);

}  // namespace translution
