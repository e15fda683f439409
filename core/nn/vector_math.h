#pragma once
// The element-wise arithmetic of a forward without gradients, in place on raw
// rows: GELU and a scaled, masked softmax. One image's self-attention block
// spent more time in LibTorch's per-op overhead for these (and the layers
// around them) than in their arithmetic (docs/benchmarks.md, session 9), so
// nn/fused_inference runs them inside its own passes instead.
//
// float runs 16 lanes at a time where the CPU has AVX-512: exp by range
// reduction and a degree-7 polynomial (about 1 ulp), erf by Abramowitz and
// Stegun 7.1.26 (absolute error below 1.5e-7, the formula LibTorch's own
// vectorised erf uses). double, and float elsewhere, use std::exp and std::erf.
#include <cstdint>

namespace translution {

// x[i] = x[i] / 2 (1 + erf(x[i] / sqrt 2)), LibTorch's default (exact) GELU.
void gelu_in_place(float* x, int64_t n);
void gelu_in_place(double* x, int64_t n);

// row[j] = exp(scale (row[j] - max)) / sum over the kept j, where kept[j] (or
// every j when kept is null); the others become 0. The same as softmax(scale x)
// with the masked logits at -infinity.
void scaled_softmax_in_place(float* row, int64_t n, float scale, const bool* kept);
void scaled_softmax_in_place(double* row, int64_t n, double scale, const bool* kept);

// Whether float takes the vectorised path here (for the tests' tolerances).
bool vector_math_vectorised();

}  // namespace translution
