#pragma once
// Arithmetic on the short vectors of the per-pair work (one head's slice of a
// pair's row: 8 to 64 values), shared by the pair kernels (cpu/pair_kernels.h)
// and the per-matrix blocks (cpu/pair_blocks.h).
#include <cstdint>

namespace translution {

// Eight partial sums let the compiler vectorise the reduction without reassociating it itself.
template <typename T>
inline T dot(const T* __restrict x, const T* __restrict y, int64_t n) {
  T acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int u = 0; u < 8; ++u) acc[u] += x[i + u] * y[i + u];
  for (; i < n; ++i) acc[0] += x[i] * y[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// y += a x
template <typename T>
inline void axpy(T* __restrict y, T a, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// y = a x; y may be x (in-place gradients), so no restrict here.
template <typename T>
inline void scaled(T* y, T a, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
}

// y = sum_h a[h] x[h stride ...] over `heads` vectors of n values.
template <typename T>
inline void weighted_sum(T* __restrict y, const T* a, const T* __restrict x, int64_t heads, int64_t stride,
                         int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[0] * x[i];
  for (int64_t h = 1; h < heads; ++h) axpy(y, a[h], x + h * stride, n);
}

}  // namespace translution
