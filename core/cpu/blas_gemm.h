#pragma once
// Row-major matrix products on raw CPU memory, straight into the process's BLAS
// (sgemm_/dgemm_, found at run time). The relative projections make thousands of
// small GEMMs per forward (one per offset matrix); through at::mm each pays for
// views, dispatch and checks, about a quarter of a Translution forward at batch 1
// (docs/performance.md). Where no BLAS symbol is found, callers use at::mm.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace translution {

// True when blas_gemm can run on this tensor's memory: CPU, contiguous, float or
// double, a BLAS found (the reference options never ask: their callers check them
// first).
bool blas_gemm_usable(const at::Tensor& t);
// The same for blas_gemm_strided: rows need not be packed, only their elements.
bool blas_gemm_rows_usable(const at::Tensor& t);

// Float products of at least kOneDnnLeastWork multiply-adds, where each product
// runs on one thread (OpenBLAS set to one thread: a training step split over the
// cores, the engine's own splits, the studio), go to oneDNN's sgemm when the
// process has it: Debian's LibTorch links libdnnl, whose AVX-512 kernels run a
// training step's large dense products faster than OpenBLAS's, and products of
// about 50 x 50 x 64 (one head's logits) slower, hence the bound
// (docs/performance.md, "Large products: oneDNN's sgemm"). Where it is absent
// (PyTorch's own LibTorch builds keep its symbols hidden) every product goes to
// the BLAS.
constexpr int64_t kOneDnnLeastWork = int64_t(1) << 19;
bool onednn_sgemm_available();
// Whether products run on oneDNN now, from the bound up: available, and OpenBLAS
// at one thread per product.
bool onednn_sgemm_applies();
// Whether a float product of m x n x k called now would run on oneDNN.
bool onednn_sgemm_takes(int64_t m, int64_t n, int64_t k);
// Products oneDNN has computed in this process (for tests: that it ran).
int64_t onednn_sgemm_products();
// c [m x n] = a [m x k] b [k x n] (row-major, packed) on oneDNN's sgemm over
// `threads` OpenMP threads, whatever the switch says: the benchmarks' GEMM
// reference on every core. False where oneDNN is absent or refused the call.
bool onednn_sgemm_on_threads(int threads, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                             float* c);

// c[m x n] = op(a) op(b), all row-major: op(a) is a [m x k], or a stored [k x m]
// and transposed when trans_a; op(b) is b [k x n], or b stored [n x k] when trans_b.
template <typename T>
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c);

// The same with explicit row strides (leading dimensions) of a, b and c, for
// matrices inside larger tensors (one head's columns of [B, N, H x dh] rows).
// accumulate: c += op(a) op(b) (the BLAS's beta = 1) instead of overwriting c.
template <typename T>
void blas_gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                       const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate = false);

}  // namespace translution
