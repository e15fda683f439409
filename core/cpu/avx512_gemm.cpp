#include "cpu/avx512_gemm.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/kernel_observer.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/unused.h"

namespace translution {
namespace {

constexpr int kMaxRows = 12;  // rows of a register block (below)
constexpr int kStrip = 32;    // columns one block sweeps: 2 vectors, 24 KB of b at k = 192 (L1)

#if defined(__x86_64__)

// c[R x 16V] = a[R x k] b[k x 16V] (with Tail, the last vector only in the
// columns `tail` selects), with P lines from `prefetch` on prefetched per step
// of k (P k lines in all; the caller keeps them inside its range). A
// register block is R x V accumulators, V loads of b and R broadcasts of a per
// step: 12 x 2 leaves 6 of the 32 registers free and keeps FMAs, not loads, the
// limit (24 FMAs to 14 loads). With Two, as many lines again come from prefetch2.
//
// W is the type b is stored in: float, or Bf16Bits (bfloat16 weights, avx512_gemm_bf16):
// widened to float as they are loaded (a bfloat16 is the top half of a float's
// bits), so only the memory read is halved, never the sums. In the strip layout
// (avx512_gemm.h) one 64-byte load holds a strip's two vectors: 32-bit word t is
// column 16 + t's bits above column t's, so a shift gives the first vector and a
// mask the second, two instructions beside the FMAs for 32 columns.
template <typename W>
__attribute__((target("avx512f"))) inline void load_b_pair(const W* p, __m512& first, __m512& second) {
  if constexpr (std::is_same_v<W, float>) {
    first = _mm512_loadu_ps(p);
    second = _mm512_loadu_ps(p + 16);
  } else {
    const __m512i words = _mm512_loadu_si512(p);
    // (maskz with every lane on: the plain shift's undefined source trips GCC 12's -Wmaybe-uninitialized)
    first = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(__mmask16(0xFFFF), words, 16));
    second = _mm512_castsi512_ps(_mm512_and_si512(words, _mm512_set1_epi32(int(0xFFFF0000u))));
  }
}

template <int R, int V, int P, bool Tail, bool Two = false, typename W = float>
__attribute__((target("avx512f"))) void block(int64_t k, const float* a, int64_t lda, const W* b, int64_t ldb,
                                              float* c, int64_t ldc, const char* prefetch,
                                              const char* prefetch2, __mmask16 tail) {
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    if constexpr (P >= 1) _mm_prefetch(prefetch + p * (64 * P), _MM_HINT_T1);
    if constexpr (P >= 2) _mm_prefetch(prefetch + p * (64 * P) + 64, _MM_HINT_T1);
    if constexpr (Two && P >= 1) _mm_prefetch(prefetch2 + p * (64 * P), _MM_HINT_T1);
    if constexpr (Two && P >= 2) _mm_prefetch(prefetch2 + p * (64 * P) + 64, _MM_HINT_T1);
    const W* bp = b + p * ldb;
    __m512 w[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; v += 2) {
      if constexpr (V == 1) {  // float only: bfloat16 products take whole strips of 32 (avx512_gemm_bf16)
        static_assert(std::is_same_v<W, float>);
        w[0] = Tail ? _mm512_maskz_loadu_ps(tail, bp) : _mm512_loadu_ps(bp);
      } else if constexpr (Tail) {
        static_assert(std::is_same_v<W, float>);
        w[v] = _mm512_loadu_ps(bp + 16 * v);
        w[v + 1] = v + 1 == V - 1 ? _mm512_maskz_loadu_ps(tail, bp + 16 * v + 16)
                                  : _mm512_loadu_ps(bp + 16 * v + 16);
      } else {
        load_b_pair(bp + 16 * v, w[v], w[v + 1]);
      }
    }
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
    for (int v = 0; v < V; ++v) {
      if (Tail && v == V - 1)
        _mm512_mask_storeu_ps(c + r * ldc + 16 * v, tail, acc[r][v]);
      else
        _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
    }
}

template <typename W>
using Block = void (*)(int64_t, const float*, int64_t, const W*, int64_t, float*, int64_t, const char*,
                       const char*, __mmask16);

// A product of at most kWideRows rows is one register block high, so 2 x R
// accumulators are too few to hide the FMA latency and the block would wait on
// its own sums. Such products sweep
// 64 columns at a time instead: R x 4 accumulators, and b is read once either
// way. P lines per step are prefetched from each of the two 32-column blocks'
// ranges of the prefetch plan, so the plan is the same as for narrow blocks.
constexpr int kWideRows = 6;
constexpr int kWideStrip = 64;

// [rows - 1][lines per step]
template <typename W, int... R>
constexpr auto wide_blocks_of(std::integer_sequence<int, R...>) {
  struct Table {
    Block<W> f[kWideRows][3];
  };
  return Table{{{block<R + 1, 4, 0, false, true, W>, block<R + 1, 4, 1, false, true, W>,
                 block<R + 1, 4, 2, false, true, W>}...}};
}
template <typename W>
constexpr auto kWideBlocks = wide_blocks_of<W>(std::make_integer_sequence<int, kWideRows>{});

// [rows - 1][vectors - 1][lines per step][whether the last vector is partial]
template <int... R>
constexpr auto blocks_of(std::integer_sequence<int, R...>) {
  struct Table {
    Block<float> f[kMaxRows][2][3][2];
  };
  return Table{{{{{block<R + 1, 1, 0, false>, block<R + 1, 1, 0, true>},
                  {block<R + 1, 1, 1, false>, block<R + 1, 1, 1, true>},
                  {block<R + 1, 1, 2, false>, block<R + 1, 1, 2, true>}},
                 {{block<R + 1, 2, 0, false>, block<R + 1, 2, 0, true>},
                  {block<R + 1, 2, 1, false>, block<R + 1, 2, 1, true>},
                  {block<R + 1, 2, 2, false>, block<R + 1, 2, 2, true>}}}...}};
}
constexpr auto kBlocks = blocks_of(std::make_integer_sequence<int, kMaxRows>{});

// bfloat16 weights: whole 32-column strips only, [rows - 1][lines per step].
template <int... R>
constexpr auto bf16_blocks_of(std::integer_sequence<int, R...>) {
  struct Table {
    Block<Bf16Bits> f[kMaxRows][3];
  };
  return Table{{{block<R + 1, 2, 0, false, false, Bf16Bits>, block<R + 1, 2, 1, false, false, Bf16Bits>,
                 block<R + 1, 2, 2, false, false, Bf16Bits>}...}};
}
constexpr auto kBf16Blocks = bf16_blocks_of(std::make_integer_sequence<int, kMaxRows>{});

template <typename W>
void narrow_block(int rows, int vectors, int per_step, bool partial, int64_t k, const float* a, int64_t lda,
                  const W* b, int64_t ldb, float* c, int64_t ldc, const char* prefetch, __mmask16 tail) {
  if constexpr (std::is_same_v<W, float>)
    kBlocks.f[rows - 1][vectors - 1][per_step][partial](k, a, lda, b, ldb, c, ldc, prefetch, nullptr, tail);
  else
    kBf16Blocks.f[rows - 1][per_step](k, a, lda, b, ldb, c, ldc, prefetch, nullptr, tail);  // vectors: 2
}

// body(first row, rows) for the register blocks of an m-row product: blocks of
// nearly equal height, at most kMaxRows (15 -> 7 + 8), since a block of few rows
// has too few independent accumulators to hide the FMA latency.
template <typename F>
void for_row_blocks(int64_t m, F&& body) {
  const int64_t row_blocks = (m + kMaxRows - 1) / kMaxRows;
  const int64_t base_rows = m / row_blocks,
                taller = row_blocks - m % row_blocks;  // blocks from `taller` on: +1
  for (int64_t i = 0, row = 0; i < row_blocks; ++i) {
    const int64_t rows = base_rows + (i >= taller);
    body(row, rows);
    row += rows;
  }
}

// Strips of 32 columns outside (64 for a product of at most kWideRows rows, up to
// its last whole 64; kWideBlocks), row blocks inside, so each strip of b is read
// from memory (or L2) once and from L1 for every further block (for_row_blocks).
// Each block prefetches its share of the next matrix's lines (avx512_gemm_prefetch).
template <typename W>
void run(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* b, int64_t ldb, float* c,
         int64_t ldc, const char* next, const Avx512GemmPrefetch& plan) {
  int64_t block = 0, j = 0;
  if (m <= kWideRows)  // one row block: whole 64-column strips wide, the rest below
    for (; j + kWideStrip <= n; j += kWideStrip, block += 2) {
      const char* prefetch = plan.per_step ? next + 64 * plan.first_line(block, k) : nullptr;
      const char* prefetch2 = plan.per_step ? next + 64 * plan.first_line(block + 1, k) : nullptr;
      kWideBlocks<W>.f[m - 1][plan.per_step](k, a, lda, b + j, ldb, c + j, ldc, prefetch, prefetch2, 0xFFFF);
    }
  for (; j < n; j += kStrip) {
    // The last strip may be narrower: its last vector is loaded and stored under a mask.
    const int64_t width = std::min<int64_t>(kStrip, n - j), partial = width % 16;
    const int vectors = int((width + 15) / 16);
    const __mmask16 tail = partial ? __mmask16((1u << partial) - 1) : __mmask16(0xFFFF);
    for_row_blocks(m, [&](int64_t row, int64_t rows) {
      const int64_t this_block = block++;
      const char* prefetch = plan.per_step ? next + 64 * plan.first_line(this_block, k) : nullptr;
      narrow_block<W>(int(rows), vectors, plan.per_step, partial != 0, k, a + row * lda, lda, b + j, ldb,
                      c + row * ldc + j, ldc, prefetch, tail);
    });
  }
}

// c[R x 32] = a^T b for a stored k x R (row p holds the p-th entry of every
// output row): the register block of `block`, its broadcasts read along a's rows.
// Both vectors are loaded and stored under masks (tails[v]), so one kernel covers
// any width up to 32.
template <int R>
__attribute__((target("avx512f"))) void block_at(int64_t k, const float* a, int64_t lda, const float* b,
                                                 int64_t ldb, float* c, int64_t ldc,
                                                 const __mmask16 tails[2]) {
  __m512 acc[R][2];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m512 w0 = _mm512_maskz_loadu_ps(tails[0], b + p * ldb);
    const __m512 w1 = _mm512_maskz_loadu_ps(tails[1], b + p * ldb + 16);
    const float* ap = a + p * lda;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(ap[r]);
      acc[r][0] = _mm512_fmadd_ps(x, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, w1, acc[r][1]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, tails[0], acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, tails[1], acc[r][1]);
  }
}

using BlockAt = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                         const __mmask16*);
template <int... R>
constexpr auto at_blocks_of(std::integer_sequence<int, R...>) {
  struct Table {
    BlockAt f[kMaxRows];
  };
  return Table{{block_at<R + 1>...}};
}
constexpr auto kAtBlocks = at_blocks_of(std::make_integer_sequence<int, kMaxRows>{});

void run_at(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
            float* c, int64_t ldc) {
  for (int64_t j = 0; j < n; j += kStrip) {
    const int64_t width = std::min<int64_t>(kStrip, n - j);
    const auto mask = [](int64_t lanes) {
      return __mmask16(lanes >= 16 ? 0xFFFF : lanes <= 0 ? 0 : (1u << lanes) - 1);
    };
    const __mmask16 tails[2] = {mask(width), mask(width - 16)};
    for_row_blocks(m, [&](int64_t row, int64_t rows) {
      kAtBlocks.f[rows - 1](k, a + row, lda, b + j, ldb, c + row * ldc + j, ldc, tails);
    });
  }
}

#endif

}  // namespace

bool avx512_gemm_available() {
#if defined(__x86_64__)
  return cpu_has_avx512();
#else
  return false;
#endif
}

Avx512GemmPrefetch avx512_gemm_prefetch(int64_t m, int64_t n, int64_t k, int64_t next_bytes) {
  Avx512GemmPrefetch plan;
  plan.blocks =
      std::max<int64_t>(0, (m + kMaxRows - 1) / kMaxRows) * std::max<int64_t>(0, (n + kStrip - 1) / kStrip);
  plan.lines = (std::max<int64_t>(next_bytes, 0) + 63) / 64;
  if (plan.blocks == 0 || k <= 0 || plan.lines < k)
    return Avx512GemmPrefetch{plan.blocks, 0, 0, 0};  // too few lines
  // Every block takes the same share (one division per product, not one per
  // block, which one image's forward would notice); the last blocks' ranges are moved
  // back to end at the range's end, overlapping their neighbours'.
  plan.share = (plan.lines + plan.blocks - 1) / plan.blocks;
  plan.per_step = plan.share <= k || plan.lines < 2 * k ? 1 : 2;
  return plan;
}

namespace {
// Runs body() where this CPU can (width_ok: the widths the kernel loads), reporting
// the call as `kernel` (cpu/kernel_observer.h); an empty product (no rows or
// columns) writes nothing.
template <typename Body>
void checked(bool width_ok, bool empty, Kernel kernel, const char* what, Body&& body) {
#if defined(__x86_64__)
  if (cpu_has_avx512() && width_ok) {
    report_kernel(kernel);
    if (!empty) body();
    return;
  }
#else
  (void)width_ok;
  (void)empty;
  (void)kernel;
  (void)body;
#endif
  throw Error(std::string("internal: ") + what +
              " called where it cannot run (no AVX-512, or a width it cannot load)");
}

template <typename W>
void run_planned(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* b, int64_t ldb,
                 float* c, int64_t ldc, const void* next, int64_t next_bytes) {
#if defined(__x86_64__)
  const Avx512GemmPrefetch plan = avx512_gemm_prefetch(m, n, k, next ? next_bytes : 0);
  run(m, n, k, a, lda, b, ldb, c, ldc, static_cast<const char*>(next), plan);
#else
  unused(m, n, k, a, lda, b, ldb, c, ldc, next, next_bytes);
#endif
}
}  // namespace

void avx512_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float* c, int64_t ldc, const void* next, int64_t next_bytes) {
  checked(avx512_gemm_width_ok(n), m <= 0, Kernel::Avx512Gemm, "avx512_gemm",
          [&] { run_planned(m, n, k, a, lda, b, ldb, c, ldc, next, next_bytes); });
}

void avx512_gemm_at(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc) {
  checked(true, m <= 0 || n <= 0, Kernel::Avx512GemmAt, "avx512_gemm_at", [&] {
#if defined(__x86_64__)
    run_at(m, n, k, a, lda, b, ldb, c, ldc);
#endif
  });
}

void avx512_gemm_bf16(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const Bf16Bits* b,
                      int64_t ldb, float* c, int64_t ldc, const void* next, int64_t next_bytes) {
  checked(avx512_gemm_bf16_width_ok(n), m <= 0, Kernel::Avx512Gemm, "avx512_gemm_bf16",
          [&] { run_planned(m, n, k, a, lda, b, ldb, c, ldc, next, next_bytes); });
}

}  // namespace translution
