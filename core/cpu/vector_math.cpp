#include "cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/device.h"

namespace translution {
namespace {

template <typename T>
void gelu_scalar(const T* x, T* y, int64_t n) {
  const T root_half = T(0.70710678118654752440);
  for (int64_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * root_half));
}

// GELU'(x) = Phi(x) + x phi(x): the normal distribution's CDF plus x times its density.
template <typename T>
void gelu_backward_scalar(const T* x, const T* dy, T* dx, int64_t n) {
  const T root_half = T(0.70710678118654752440), inverse_root_two_pi = T(0.39894228040143267794);
  for (int64_t i = 0; i < n; ++i) {
    const T cdf = T(0.5) * (T(1) + std::erf(x[i] * root_half));
    dx[i] = dy[i] * (cdf + x[i] * inverse_root_two_pi * std::exp(T(-0.5) * x[i] * x[i]));
  }
}

// d[j] = scale alpha[j] (g[j] - sum_k g[k] alpha[k]): the softmax's backward,
// scaled for softmax(scale x). Masked entries have alpha 0 and get 0.
template <typename T>
void softmax_backward_scalar(const T* alpha, const T* g, T* d, int64_t n, T scale) {
  T dot = 0;
  for (int64_t j = 0; j < n; ++j) dot += g[j] * alpha[j];
  for (int64_t j = 0; j < n; ++j) d[j] = scale * alpha[j] * (g[j] - dot);
}

template <typename T>
void softmax_scalar(T* row, int64_t n, T scale, const bool* kept) {
  T top = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j)
    if (!kept || kept[j]) top = std::max(top, row[j]);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = !kept || kept[j] ? std::exp(scale * (row[j] - top)) : T(0);
    sum += row[j];
  }
  const T inverse = T(1) / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inverse;
}

#if defined(__x86_64__)

// GCC 12's own intrinsics (_mm512_max_ps and the reductions) start from
// _mm512_undefined_*, which it then reports as maybe uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define AVX512 __attribute__((target("avx512f")))

// exp(x) = 2^m e^r with m = round(x / ln 2) and |r| <= ln 2 / 2, where the
// Taylor series to r^7 is within 6e-9 of e^r. The clamp keeps r exact for huge
// |x|; below -104 the result is 0 anyway, above 89 infinity.
AVX512 inline __m512 exp16(__m512 x) {
  // Operands in this order let a NaN through (max and min return their second operand then).
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 m = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r =
      _mm512_fnmadd_ps(m, _mm512_set1_ps(0.693145751953125f), x);  // ln 2 in two parts: m ln2_hi is exact
  r = _mm512_fnmadd_ps(m, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  for (const float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  return _mm512_scalef_ps(p, m);
}

// erf(z) = 1 - t (a1 + t (a2 + ... a5)) e^{-z^2}, t = 1 / (1 + p z), for z >= 0; odd.
// gaussian = e^{-z^2}, which GELU's derivative needs too.
AVX512 inline __m512 erf16(__m512 z, __m512 gaussian) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(int(0x80000000u)));
  const __m512 a = _mm512_abs_ps(z);
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                                 _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 poly = _mm512_set1_ps(1.061405429f);
  for (const float c : {-1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f})
    poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(c));
  const __m512 tail = _mm512_mul_ps(_mm512_mul_ps(poly, t), gaussian);
  return _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(_mm512_sub_ps(_mm512_set1_ps(1.0f), tail)), sign));
}

AVX512 inline __m512 gaussian16(__m512 z) {
  return exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(z, z)));
}

inline __mmask16 lanes(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1); }

AVX512 void gelu16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i),
                 z = _mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f));
    const __m512 e = erf16(z, gaussian16(z));
    _mm512_mask_storeu_ps(
        y + i, k,
        _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  }
}

// One exponential serves both terms: phi(x) = e^{-z^2} / sqrt(2 pi) with z = x / sqrt 2.
AVX512 void gelu_backward16(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i),
                 z = _mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f));
    const __m512 g = gaussian16(z);
    const __m512 cdf = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(erf16(z, g), _mm512_set1_ps(1.0f)));
    const __m512 slope = _mm512_fmadd_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.39894228040143267794f)), g, cdf);
    _mm512_mask_storeu_ps(dx + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dy + i), slope));
  }
}

// Lanes that are past the row's end or masked out: kept[j] for each lane.
AVX512 inline __mmask16 kept16(const bool* kept, int64_t j, __mmask16 in_row) {
  if (!kept) return in_row;
  __mmask16 k = 0;
  for (int l = 0; l < 16; ++l)
    if ((in_row >> l) & 1) k |= __mmask16(kept[j + l] ? 1u << l : 0u);
  return k;
}

AVX512 void softmax16(float* row, int64_t n, float scale, const bool* kept) {
  __m512 top = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = kept16(kept, j, lanes(n - j));
    top = _mm512_mask_max_ps(top, k, top, _mm512_maskz_loadu_ps(k, row + j));
  }
  const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(top)), s = _mm512_set1_ps(scale);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 in_row = lanes(n - j), k = kept16(kept, j, in_row);
    const __m512 e = _mm512_maskz_mov_ps(
        k, exp16(_mm512_mul_ps(s, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), shift))));
    sum = _mm512_add_ps(sum, e);
    _mm512_mask_storeu_ps(row + j, in_row, e);
  }
  const __m512 inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 in_row = lanes(n - j);
    _mm512_mask_storeu_ps(row + j, in_row, _mm512_mul_ps(_mm512_maskz_loadu_ps(in_row, row + j), inverse));
  }
}

AVX512 void softmax_backward16(const float* alpha, const float* g, float* d, int64_t n, float scale) {
  __m512 dot = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = lanes(n - j);
    dot = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, g + j), _mm512_maskz_loadu_ps(k, alpha + j), dot);
  }
  const __m512 total = _mm512_set1_ps(_mm512_reduce_add_ps(dot)), s = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = lanes(n - j);
    const __m512 a = _mm512_maskz_loadu_ps(k, alpha + j);
    const __m512 diff = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, g + j), total);
    _mm512_mask_storeu_ps(d + j, k, _mm512_mul_ps(_mm512_mul_ps(s, a), diff));
  }
}

#undef AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace

bool vector_math_vectorised() { return cpu_has_avx512(); }

void gelu(const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_avx512()) return gelu16(x, y, n);
#endif
  gelu_scalar(x, y, n);
}

void gelu(const double* x, double* y, int64_t n) { gelu_scalar(x, y, n); }

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_avx512()) return gelu_backward16(x, dy, dx, n);
#endif
  gelu_backward_scalar(x, dy, dx, n);
}

void gelu_backward(const double* x, const double* dy, double* dx, int64_t n) {
  gelu_backward_scalar(x, dy, dx, n);
}

void scaled_softmax_in_place(float* row, int64_t n, float scale, const bool* kept) {
#if defined(__x86_64__)
  if (cpu_has_avx512()) return softmax16(row, n, scale, kept);
#endif
  softmax_scalar(row, n, scale, kept);
}

void scaled_softmax_in_place(double* row, int64_t n, double scale, const bool* kept) {
  softmax_scalar(row, n, scale, kept);
}

void softmax_backward(const float* alpha, const float* g, float* d, int64_t n, float scale) {
#if defined(__x86_64__)
  if (cpu_has_avx512()) return softmax_backward16(alpha, g, d, n, scale);
#endif
  softmax_backward_scalar(alpha, g, d, n, scale);
}

void softmax_backward(const double* alpha, const double* g, double* d, int64_t n, double scale) {
  softmax_backward_scalar(alpha, g, d, n, scale);
}

}  // namespace translution
