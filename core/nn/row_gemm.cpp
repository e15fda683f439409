#include "nn/row_gemm.h"

#include "util/error.h"

#include <algorithm>
#include <atomic>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace translution {
namespace {

std::atomic<bool> g_enabled{true};
std::atomic<int64_t> g_calls{0};  // relaxed: one add per product of several microseconds

#if defined(__x86_64__)

// A register block is R rows x V vectors of 16 columns: R x V accumulators, V
// loads of b and R broadcasts of a per step of k. 12 x 2 leaves 6 of the 32
// registers free and keeps FMAs, not loads, the limit (24 FMAs to 14 loads).
constexpr int kMaxRows = 12;
constexpr int kStrip = 32;  // columns of b one block sweeps: 2 vectors, 24 KB of b at k = 192 (L1)

bool cpu_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

// c[R x 16V] = a[R x k] b[k x 16V], with P lines from `prefetch` on prefetched
// per step of k (P k lines in all; the caller keeps them inside its range).
template <int R, int V, int P>
__attribute__((target("avx512f"))) void block(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                              float* c, int64_t ldc, const char* prefetch) {
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    if constexpr (P >= 1) _mm_prefetch(prefetch, _MM_HINT_T1);
    if constexpr (P >= 2) _mm_prefetch(prefetch + 64, _MM_HINT_T1);
    prefetch += 64 * P;
    const float* bp = b + p * ldb;
    __m512 w[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) w[v] = _mm512_loadu_ps(bp + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(x, w[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

using Block = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, const char*);

template <int... R>
constexpr auto blocks_of(std::integer_sequence<int, R...>) {
  struct Table {
    Block f[kMaxRows][2][3];
  };
  return Table{{{{block<R + 1, 1, 0>, block<R + 1, 1, 1>, block<R + 1, 1, 2>},
                 {block<R + 1, 2, 0>, block<R + 1, 2, 1>, block<R + 1, 2, 2>}}...}};
}
constexpr auto kBlocks = blocks_of(std::make_integer_sequence<int, kMaxRows>{});

// Strips of 32 columns outside, row blocks inside, so each strip of b is read
// from memory (or L2) once and from L1 for every further block. The rows are cut
// into blocks of nearly equal size (15 -> 7 + 8): a block of few rows has too few
// independent accumulators to hide the FMA latency. Each block prefetches its
// share of the next matrix's lines, one or two per step of k.
void run(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
         int64_t ldc, const char* next, int64_t next_lines) {
  const int64_t row_blocks = (m + kMaxRows - 1) / kMaxRows, strips = (n + kStrip - 1) / kStrip;
  if (next_lines < k) next_lines = 0;  // too few lines to spread over the steps: not worth it
  // Every block takes the same share (one division per product: per block, the
  // divisions cost 3% of one image's forward); the last ones may overlap.
  const int64_t share = (next_lines + row_blocks * strips - 1) / (row_blocks * strips);
  const int per_step = share == 0 ? 0 : share <= k || next_lines < 2 * k ? 1 : 2;
  const int64_t base_rows = m / row_blocks, taller = row_blocks - m % row_blocks;  // blocks from `taller` on: +1
  int64_t from = 0;
  for (int64_t j = 0; j < n; j += kStrip) {
    const int vectors = n - j >= kStrip ? 2 : 1;
    for (int64_t i = 0, row = 0; i < row_blocks; ++i, from += share) {
      const int64_t rows = base_rows + (i >= taller);
      // per_step x k lines, moved back where they would run past the range's end.
      const char* prefetch = per_step ? next + 64 * std::min(from, next_lines - per_step * k) : nullptr;
      kBlocks.f[rows - 1][vectors - 1][per_step](k, a + row * lda, lda, b + j, ldb, c + row * ldc + j, ldc,
                                                 prefetch);
      row += rows;
    }
  }
}

#endif

}  // namespace

bool row_gemm_available() {
#if defined(__x86_64__)
  return g_enabled && cpu_has_avx512();
#else
  return false;
#endif
}

void set_row_gemm_enabled(bool enabled) { g_enabled = enabled; }
int64_t row_gemm_calls() { return g_calls.load(std::memory_order_relaxed); }

void row_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc, const void* next, int64_t next_bytes) {
#if defined(__x86_64__)
  if (cpu_has_avx512() && row_gemm_width_ok(n)) {
    g_calls.fetch_add(1, std::memory_order_relaxed);
    if (m <= 0) return;
    const int64_t lines = next ? (next_bytes + 63) / 64 : 0;
    return run(m, n, k, a, lda, b, ldb, c, ldc, static_cast<const char*>(next), lines);
  }
#endif
  throw Error("internal: row_gemm called where it cannot run (no AVX-512, or a width not a multiple of 16)");
}

}  // namespace translution
