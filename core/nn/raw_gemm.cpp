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

bool raw_gemm_usable(const at::Tensor& t) {
  if (!g_enabled || !t.defined() || !t.is_cpu() || !t.is_contiguous()) return false;
  if (t.scalar_type() == at::kFloat) return find_gemm<float>() != nullptr;
  if (t.scalar_type() == at::kDouble) return find_gemm<double>() != nullptr;
  return false;
}

template <typename T>
void raw_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  const Gemm<T> gemm = find_gemm<T>();
  if (!gemm) throw Error("internal: raw_gemm called without a BLAS");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int M = int(n), N = int(m), K = int(k);
  const int lda = int(trans_b ? k : n), ldb = int(trans_a ? m : k), ldc = int(n);
  const T one = 1, zero = 0;
  gemm(&ta, &tb, &M, &N, &K, &one, b, &lda, a, &ldb, &zero, c, &ldc);
}

template void raw_gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*);
template void raw_gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*);

}  // namespace translution
