#pragma once
// c[m x n] = a[m x k] b[k x n] in fp32, row-major, for the relative projections'
// per-matrix products: few rows (about 15 per matrix for one image), one offset
// matrix b read straight from its bank, never packed. OpenBLAS runs these at about
// a third of the core's FMA rate and cannot know that the next matrix is about to
// be needed; this kernel keeps a 32-column strip of b in L1 across all rows (a
// product of at most 6 rows, one register block high, sweeps 64 columns at a
// time instead) and prefetches the caller's next matrix into L2 while it
// computes, so streaming the bank overlaps the arithmetic (docs/performance.md). AVX-512 only; callers fall
// back to the BLAS where it is absent. Plain C++ on raw pointers (no LibTorch).
#include <algorithm>
#include <cstdint>

namespace translution {

// True when this CPU can run avx512_gemm (the reference options never ask: their
// callers check them first).
bool avx512_gemm_available();

// Products of at most this many rows go to avx512_gemm; taller ones go to the BLAS,
// whose packed kernels are as fast there (docs/performance.md, "Few-row products:
// the engine's row kernel"). A matrix of at most 32 x 32 (LoR's)
// goes to the engine's kernels whatever the rows (cpu/pair_matrices.cpp, narrow_bank).
constexpr int64_t kAvx512GemmMostRows = 64;

// Whether avx512_gemm handles this width: any (a last partial vector of 16 floats is
// masked), but none.
inline bool avx512_gemm_width_ok(int64_t n) { return n > 0; }

// c = a b (c is overwritten). lda, ldb, ldc are row strides in floats. While it
// runs, the next_bytes bytes at next (may be null) are prefetched into L2.
void avx512_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float* c, int64_t ldc, const void* next = nullptr, int64_t next_bytes = 0);

// c[m x n] = a^T b with a stored k x m (lda: its row stride), b k x n: the
// weight gradient G^T dS of a per-matrix product, read without transposing G.
// c is overwritten. A kernel of its own with avx512_gemm's block shape (12 rows by
// 32 columns, every load and store masked), no 64-column blocks, no prefetch.
void avx512_gemm_at(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc);

// The bits of a bfloat16 (the top 16 bits of the float it rounds).
using Bf16Bits = uint16_t;

// Whether avx512_gemm_bf16 handles this width: whole strips of 32 columns.
inline bool avx512_gemm_bf16_width_ok(int64_t n) { return n > 0 && n % 32 == 0; }

// avx512_gemm with b stored as bfloat16 in the strip layout (cpu/bf16_weights.h makes
// it): within every 32 columns of a row, bfloat16 2t holds column t and 2t + 1
// column 16 + t, so that one load widens to both of a strip's vectors. b's values
// are widened to float as they are loaded and everything else is avx512_gemm's fp32
// arithmetic: the product is exactly a (float) times the rounded b, summed in
// float, for half of b's memory traffic. ldb counts bfloat16s; next_bytes the
// next matrix's bytes.
void avx512_gemm_bf16(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const Bf16Bits* b,
                      int64_t ldb, float* c, int64_t ldc, const void* next = nullptr, int64_t next_bytes = 0);

// How avx512_gemm spreads the prefetch of `next` over its register blocks (each a
// strip of 32 columns by up to 12 rows), exposed for its tests: every block
// prefetches per_step lines per step of k, per_step x k lines from first_line.
struct Avx512GemmPrefetch {
  int64_t blocks = 0;  // register blocks of the product
  int64_t lines = 0;   // 64-byte lines to prefetch (0: too few to spread over the steps)
  int64_t share = 0;   // lines per block
  int per_step = 0;    // 0, 1 or 2
  int64_t first_line(int64_t block, int64_t k) const { return std::min(block * share, lines - per_step * k); }
};
Avx512GemmPrefetch avx512_gemm_prefetch(int64_t m, int64_t n, int64_t k, int64_t next_bytes);

}  // namespace translution
