#include "nn/raw_gemm.h"

#include <dlfcn.h>

#include <atomic>
#include <type_traits>

#include "util/error.h"

namespace translution {
namespace {

// The Fortran BLAS interface (32-bit integers, as Debian's OpenBLAS and reference BLAS use).
template <typename T>
using Gemm = void (*)(const char*, const char*, const int*, const int*, const int*, const T*, const T*, const int*,
                      const T*, const int*, const T*, T*, const int*);

template <typename T>
Gemm<T> find_gemm() {
  static const Gemm<T> gemm =
      reinterpret_cast<Gemm<T>>(dlsym(RTLD_DEFAULT, std::is_same_v<T, float> ? "sgemm_" : "dgemm_"));
  return gemm;
}

std::atomic<bool> g_enabled{true};

}  // namespace

void set_raw_gemm_enabled(bool enabled) { g_enabled = enabled; }
bool raw_gemm_enabled() { return g_enabled; }

bool raw_gemm_usable(const at::Tensor& t) { return t.defined() && t.is_contiguous() && raw_gemm_rows_usable(t); }

bool raw_gemm_rows_usable(const at::Tensor& t) {
  if (!g_enabled || !t.defined() || !t.is_cpu() || t.dim() < 1 || t.stride(-1) != 1) return false;
  if (t.scalar_type() == at::kFloat) return find_gemm<float>() != nullptr;
  if (t.scalar_type() == at::kDouble) return find_gemm<double>() != nullptr;
  return false;
}

template <typename T>
void raw_gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                      const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  const Gemm<T> gemm = find_gemm<T>();
  if (!gemm) throw Error("internal: raw_gemm called without a BLAS");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int M = int(n), N = int(m), K = int(k), la = int(lda), lb = int(ldb), lc = int(ldc);
  const T one = 1, beta = accumulate ? 1 : 0;
  gemm(&ta, &tb, &M, &N, &K, &one, b, &lb, a, &la, &beta, c, &lc);
}

template <typename T>
void raw_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  raw_gemm_strided(trans_a, trans_b, m, n, k, a, trans_a ? m : k, b, trans_b ? k : n, c, n);
}

template void raw_gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*);
template void raw_gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*);
template void raw_gemm_strided<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                                      int64_t, float*, int64_t, bool);
template void raw_gemm_strided<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t, const double*,
                                       int64_t, double*, int64_t, bool);

}  // namespace translution
