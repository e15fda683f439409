#include "nn/raw_gemm.h"

#include <dlfcn.h>

#include <atomic>
#include <type_traits>

#include "util/device.h"
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

// oneDNN's row-major sgemm (dnnl_dim_t is int64_t; dnnl_success is 0), and the
// OpenMP calls its threading reads, all from the libraries LibTorch loaded.
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
using OmpGetThreads = int (*)();
using OmpSetThreads = void (*)(int);

struct OneDnn {
  DnnlSgemm sgemm = reinterpret_cast<DnnlSgemm>(dlsym(RTLD_DEFAULT, "dnnl_sgemm"));
  OmpGetThreads get_threads = reinterpret_cast<OmpGetThreads>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  OmpSetThreads set_threads = reinterpret_cast<OmpSetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  bool found() const { return sgemm && get_threads && set_threads; }
};

const OneDnn& onednn() {
  static const OneDnn library;
  return library;
}

std::atomic<bool> g_onednn{true};
std::atomic<int64_t> g_onednn_products{0};

// c = op(a) op(b) (+ c) on oneDNN over `threads` threads. oneDNN threads its
// products over OpenMP's count for the calling thread, which a thread of the
// engine's own does not set (at one, it would start a team of its own beside the
// other core's work): set for the call, then restored. False where oneDNN refused.
bool onednn_gemm(int threads, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const OneDnn& dnnl = onednn();
  const int before = dnnl.get_threads();
  if (before != threads) dnnl.set_threads(threads);
  const int status = dnnl.sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc);
  if (before != threads) dnnl.set_threads(before);
  if (status != 0) return false;
  g_onednn_products.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool onednn_sgemm_available() { return onednn().found(); }
void set_onednn_sgemm_enabled(bool enabled) { g_onednn = enabled; }
bool onednn_sgemm_enabled() { return g_onednn && onednn_sgemm_available(); }

bool onednn_sgemm_applies() { return onednn_sgemm_enabled() && blas_threads() == 1; }

bool onednn_sgemm_takes(int64_t m, int64_t n, int64_t k) {
  return m * n * k >= kOneDnnLeastWork && onednn_sgemm_applies();
}

int64_t onednn_sgemm_products() { return g_onednn_products.load(std::memory_order_relaxed); }

bool onednn_sgemm_on_threads(int threads, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  return onednn_sgemm_available() && onednn_gemm(threads, 'N', 'N', m, n, k, a, k, b, n, c, n, false);
}

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
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_sgemm_takes(m, n, k) &&
        onednn_gemm(1, trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, a, lda, b, ldb, c, ldc, accumulate))
      return;
  }
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
