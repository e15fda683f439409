#include "cpu/blas_gemm.h"

#include <atomic>
#include <type_traits>

#include "util/engine_options.h"

#ifdef TRANSLUTION_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef TRANSLUTION_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif

#include "util/device.h"
#include "util/error.h"
#include "util/unused.h"

namespace translution {
namespace {

std::atomic<int64_t> g_onednn_products{0};

// c = op(a) op(b) (+ c) on oneDNN over `threads` threads. oneDNN threads its
// products over OpenMP's count for the calling thread, which a thread of the
// engine's own does not set (at one, it would start a team of its own beside the
// other core's work): set for the call, then restored. False where oneDNN refused.
bool onednn_gemm(int threads, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
#ifdef TRANSLUTION_HAVE_DNNL
  const int before = omp_get_max_threads();
  if (before != threads) omp_set_num_threads(threads);
  const dnnl_status_t status =
      dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc);
  if (before != threads) omp_set_num_threads(before);
  if (status != dnnl_success) return false;
  g_onednn_products.fetch_add(1, std::memory_order_relaxed);
  return true;
#else
  unused(threads, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  return false;
#endif
}

}  // namespace

#ifdef TRANSLUTION_HAVE_DNNL
bool onednn_sgemm_available() { return true; }
#else
bool onednn_sgemm_available() { return false; }
#endif

bool onednn_sgemm_applies() { return onednn_sgemm_available() && blas_threads() == 1; }

bool onednn_sgemm_takes(int64_t m, int64_t n, int64_t k) {
  return m * n * k >= kOneDnnLeastWork && onednn_sgemm_applies();
}

int64_t onednn_sgemm_products() { return g_onednn_products.load(std::memory_order_relaxed); }

bool onednn_sgemm_on_threads(int threads, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                             float* c) {
  return onednn_sgemm_available() && onednn_gemm(threads, 'N', 'N', m, n, k, a, k, b, n, c, n, false);
}

bool blas_gemm_usable(const at::Tensor& t) {
  return t.defined() && t.is_contiguous() && blas_gemm_rows_usable(t);
}

bool blas_gemm_rows_usable(const at::Tensor& t) {
  if (!t.defined() || !t.is_cpu() || t.dim() < 1 || t.stride(-1) != 1) return false;
#ifdef TRANSLUTION_HAVE_CBLAS
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
#else
  return false;
#endif
}

template <typename T>
void blas_gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                       const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_sgemm_takes(m, n, k) &&
        onednn_gemm(1, trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, a, lda, b, ldb, c, ldc, accumulate))
      return;
  }
#ifdef TRANSLUTION_HAVE_CBLAS
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const T beta = accumulate ? 1 : 0;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), beta, c,
                int(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), beta, c,
                int(ldc));
#else
  unused(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  throw Error("internal: blas_gemm called in a build without cblas.h");
#endif
}

template <typename T>
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  blas_gemm_strided(trans_a, trans_b, m, n, k, a, trans_a ? m : k, b, trans_b ? k : n, c, n);
}

template void blas_gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*);
template void blas_gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*);
template void blas_gemm_strided<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                                       const float*, int64_t, float*, int64_t, bool);
template void blas_gemm_strided<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                                        const double*, int64_t, double*, int64_t, bool);

}  // namespace translution
