#include "nn/vector_math.h"

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
void gelu_scalar(T* x, int64_t n) {
  const T root_half = T(0.70710678118654752440);
  for (int64_t i = 0; i < n; ++i) x[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * root_half));
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
  __m512 r = _mm512_fnmadd_ps(m, _mm512_set1_ps(0.693145751953125f), x);  // ln 2 in two parts: m ln2_hi is exact
  r = _mm512_fnmadd_ps(m, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  for (const float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  return _mm512_scalef_ps(p, m);
}

// erf(z) = 1 - t (a1 + t (a2 + ... a5)) e^{-z^2}, t = 1 / (1 + p z), for z >= 0; odd.
AVX512 inline __m512 erf16(__m512 z) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(int(0x80000000u)));
  const __m512 a = _mm512_abs_ps(z);
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 poly = _mm512_set1_ps(1.061405429f);
  for (const float c : {-1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f})
    poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(c));
  poly = _mm512_mul_ps(poly, t);
  const __m512 tail = _mm512_mul_ps(poly, exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a))));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_sub_ps(_mm512_set1_ps(1.0f), tail)), sign));
}

inline __mmask16 lanes(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1); }

AVX512 void gelu16(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    const __m512 e = erf16(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f)));
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
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
    const __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_mul_ps(s, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), shift))));
    sum = _mm512_add_ps(sum, e);
    _mm512_mask_storeu_ps(row + j, in_row, e);
  }
  const __m512 inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 in_row = lanes(n - j);
    _mm512_mask_storeu_ps(row + j, in_row, _mm512_mul_ps(_mm512_maskz_loadu_ps(in_row, row + j), inverse));
  }
}

#undef AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace

bool vector_math_vectorised() { return cpu_has_avx512(); }

void gelu_in_place(float* x, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_avx512()) return gelu16(x, n);
#endif
  gelu_scalar(x, n);
}

void gelu_in_place(double* x, int64_t n) { gelu_scalar(x, n); }

void scaled_softmax_in_place(float* row, int64_t n, float scale, const bool* kept) {
#if defined(__x86_64__)
  if (cpu_has_avx512()) return softmax16(row, n, scale, kept);
#endif
  softmax_scalar(row, n, scale, kept);
}

void scaled_softmax_in_place(double* row, int64_t n, double scale, const bool* kept) {
  softmax_scalar(row, n, scale, kept);
}

}  // namespace translution
