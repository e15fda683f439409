#pragma once
// LayerNorm over raw rows, forward and backward: the arithmetic behind
// cpu/inference_passes's normalize() (no gradients) and cpu/training_passes'
// (with them). The variance is the biased one, as LayerNorm defines it.
#include <cstdint>

namespace translution {

// y = (x - mean) rstd gamma + beta for each of `rows` rows of n, rstd =
// 1 / sqrt(var + eps); gamma and beta may be null (1 and 0). When mean and
// rstd are given, each row's are written there (for the backward).
template <typename T>
void layer_norm_rows(const T* x, T* y, int64_t rows, int64_t n, const T* gamma, const T* beta, double eps,
                     T* mean = nullptr, T* rstd = nullptr);

// Given g = dL/dy for those rows: dx (may be g) and, when not null, dgamma and
// dbeta += this block of rows' share. With xhat = (x - mean) rstd and gy = g gamma:
// dx = rstd (gy - mean(gy) - xhat mean(gy xhat)), dgamma += g xhat, dbeta += g.
template <typename T>
void layer_norm_rows_backward(const T* x, const T* g, const T* mean, const T* rstd, const T* gamma,
                              int64_t rows, int64_t n, T* dx, T* dgamma, T* dbeta);

}  // namespace translution
