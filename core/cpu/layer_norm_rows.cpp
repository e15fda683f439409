#include "cpu/layer_norm_rows.h"

#include <cmath>

namespace translution {
namespace {

// Sixteen partial sums: the compiler vectorises them without reassociating a single one.
template <typename T, typename F>
T sum_over(int64_t n, F term) {
  T acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int u = 0; u < 16; ++u) acc[u] += term(i + u);
  for (; i < n; ++i) acc[0] += term(i);
  T total = 0;
  for (const T a : acc) total += a;
  return total;
}

// Mean, then the mean squared deviation from it: two passes over a row in L1,
// and no cancellation where one element is far from the rest.
template <typename T>
void moments(const T* x, int64_t n, T& mean, T& variance) {
  mean = sum_over<T>(n, [&](int64_t i) { return x[i]; }) / T(n);
  variance = sum_over<T>(n, [&](int64_t i) { return (x[i] - mean) * (x[i] - mean); }) / T(n);
}

}  // namespace

template <typename T>
void layer_norm_rows(const T* x, T* y, int64_t rows, int64_t n, const T* gamma, const T* beta, double eps,
                     T* mean, T* rstd) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    T mu, variance;
    moments(x, n, mu, variance);
    const T scale = T(1) / std::sqrt(variance + T(eps));
    if (mean) {
      mean[r] = mu;
      rstd[r] = scale;
    }
    if (gamma && beta)
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mu) * scale * gamma[i] + beta[i];
    else
      for (int64_t i = 0; i < n; ++i)
        y[i] = (x[i] - mu) * scale * (gamma ? gamma[i] : T(1)) + (beta ? beta[i] : T(0));
  }
}

template <typename T>
void layer_norm_rows_backward(const T* x, const T* g, const T* mean, const T* rstd, const T* gamma,
                              int64_t rows, int64_t n, T* dx, T* dgamma, T* dbeta) {
  for (int64_t r = 0; r < rows; ++r, x += n, g += n, dx += n) {
    const T mu = mean[r], s = rstd[r];
    const auto gy = [&](int64_t i) { return gamma ? g[i] * gamma[i] : g[i]; };
    const T mean_gy = sum_over<T>(n, gy) / T(n);
    const T mean_gy_xhat = sum_over<T>(n, [&](int64_t i) { return gy(i) * (x[i] - mu) * s; }) / T(n);
    // dgamma and dbeta first: dx may overwrite g.
    if (dgamma)
      for (int64_t i = 0; i < n; ++i) dgamma[i] += g[i] * (x[i] - mu) * s;
    if (dbeta)
      for (int64_t i = 0; i < n; ++i) dbeta[i] += g[i];
    for (int64_t i = 0; i < n; ++i) dx[i] = s * (gy(i) - mean_gy - (x[i] - mu) * s * mean_gy_xhat);
  }
}

template void layer_norm_rows<float>(const float*, float*, int64_t, int64_t, const float*, const float*,
                                     double, float*, float*);
template void layer_norm_rows<double>(const double*, double*, int64_t, int64_t, const double*, const double*,
                                      double, double*, double*);
template void layer_norm_rows_backward<float>(const float*, const float*, const float*, const float*,
                                              const float*, int64_t, int64_t, float*, float*, float*);
template void layer_norm_rows_backward<double>(const double*, const double*, const double*, const double*,
                                               const double*, int64_t, int64_t, double*, double*, double*);

}  // namespace translution
