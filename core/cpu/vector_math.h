#pragma once
// The element-wise arithmetic of the engine's own passes, on raw rows: GELU and
// a scaled, masked softmax, forward and backward. One image's self-attention block
// spent more time in LibTorch's per-op overhead for these (and the layers
// around them) than in their arithmetic (docs/performance.md), so
// cpu/inference_passes runs them inside its own passes instead.
//
// float runs 16 lanes at a time where the CPU has AVX-512: exp by range
// reduction and a degree-7 polynomial (about 1 ulp), erf by Abramowitz and
// Stegun 7.1.26 (absolute error below 1.5e-7, the formula LibTorch's own
// vectorised erf uses). double, and float elsewhere, use std::exp and std::erf.
#include <cstdint>

namespace translution {

// y[i] = x[i] / 2 (1 + erf(x[i] / sqrt 2)), LibTorch's default (exact) GELU; y may be x.
void gelu(const float* x, float* y, int64_t n);
void gelu(const double* x, double* y, int64_t n);
inline void gelu_in_place(float* x, int64_t n) { gelu(x, x, n); }
inline void gelu_in_place(double* x, int64_t n) { gelu(x, x, n); }
// dx[i] = dy[i] GELU'(x[i]), GELU'(x) = Phi(x) + x phi(x); dx may be dy.
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);
void gelu_backward(const double* x, const double* dy, double* dx, int64_t n);

// row[j] = exp(scale (row[j] - max)) / sum over the kept j, where kept[j] (or
// every j when kept is null); the others become 0. The same as softmax(scale x)
// with the masked logits at -infinity.
void scaled_softmax_in_place(float* row, int64_t n, float scale, const bool* kept);
void scaled_softmax_in_place(double* row, int64_t n, double scale, const bool* kept);

// Given alpha = that softmax of a row and g the gradient of alpha, the gradient
// of the row: d[j] = scale alpha[j] (g[j] - sum_k g[k] alpha[k]); d may be g.
void softmax_backward(const float* alpha, const float* g, float* d, int64_t n, float scale);
void softmax_backward(const double* alpha, const double* g, double* d, int64_t n, double scale);

// Whether float takes the vectorised path here (for the tests' tolerances).
bool vector_math_vectorised();

}  // namespace translution
