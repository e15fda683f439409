#include "cpu/bf16_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cpu/helper_threads.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/unused.h"

// AMX intrinsics need GCC 11 or Clang 12; the tile permission is Linux's.
#if defined(__x86_64__) && defined(__linux__) &&      \
    ((defined(__clang__) && __clang_major__ >= 12) || \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define TRANSLUTION_AMX 1
#include <cerrno>

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace translution {
namespace {

#ifdef TRANSLUTION_AMX
int64_t round_up(int64_t x, int64_t step) { return (x + step - 1) / step * step; }

// The operands in the forms the tiles read:
//  A  bfloat16 rows [Mp x Kp] (Mp, Kp multiples of 32, zero-padded): a tile is
//     16 rows of 32 consecutive k, loaded with the row stride;
//  B  tiles [Np / 16][Kp / 32] of 16 rows x 32 bfloat16: row r of tile (j, q) holds,
//     for its 16 columns, the pair (k = 32 q + 2 r, k + 1): the layout TDPBF16PS
//     multiplies (C[i][j] += A[i][2p] B[p][2j] + A[i][2p + 1] B[p][2j + 1]).
constexpr int64_t kTile = 16 * 32;  // bfloat16 per tile

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t column_bytes[16] = {};
  uint8_t rows[16] = {};
};

// Lanes [0, n) of a 16-float load (masked lanes read nothing and are 0).
__mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// 32 bfloat16 [lo_0..lo_15, hi_0..hi_15] -> pairs [lo_0, hi_0, lo_1, hi_1, ...].
__attribute__((target("avx512f,avx512bw"))) __m512i interleave_pairs(__m512i v) {
  alignas(64) static const uint16_t order[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                 21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(order), v);
}

// r[i] element j -> r[j] element i, for 16 x 16 32-bit elements (pairs of
// bfloat16): per group of four rows their columns gathered into 128-bit lanes
// (cols 4l + c in lane l of u[4 g + c]), then the lanes of the four groups.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored \
    "-Wuninitialized"  // GCC 12's own unpack intrinsics (their unused pass-through)
__attribute__((target("avx512f"))) void transpose_16x16(__m512i r[16]) {
  __m512i u[16];
  for (int g = 0; g < 4; ++g) {
    const __m512i lo01 = _mm512_unpacklo_epi32(r[4 * g], r[4 * g + 1]),
                  hi01 = _mm512_unpackhi_epi32(r[4 * g], r[4 * g + 1]),
                  lo23 = _mm512_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]),
                  hi23 = _mm512_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
    u[4 * g] = _mm512_unpacklo_epi64(lo01, lo23);
    u[4 * g + 1] = _mm512_unpackhi_epi64(lo01, lo23);
    u[4 * g + 2] = _mm512_unpacklo_epi64(hi01, hi23);
    u[4 * g + 3] = _mm512_unpackhi_epi64(hi01, hi23);
  }
  for (int c = 0; c < 4; ++c) {  // u[c] lanes hold columns c, c + 4, c + 8, c + 12
    const __m512i even_ab = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88),
                  even_cd = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i odd_ab = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd),
                  odd_cd = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(even_ab, even_cd, 0x88);
    r[c + 8] = _mm512_shuffle_i32x4(even_ab, even_cd, 0xdd);
    r[c + 4] = _mm512_shuffle_i32x4(odd_ab, odd_cd, 0x88);
    r[c + 12] = _mm512_shuffle_i32x4(odd_ab, odd_cd, 0xdd);
  }
}
#pragma GCC diagnostic pop

// Two masked 16-float loads rounded to 32 bfloat16 [lo, hi].
__attribute__((target("avx512f,avx512bw,avx512bf16"))) __m512i to_bf16(const float* lo, __mmask16 lo_lanes,
                                                                       const float* hi, __mmask16 hi_lanes) {
  const __m512 l = _mm512_maskz_loadu_ps(lo_lanes, lo), h = _mm512_maskz_loadu_ps(hi_lanes, hi);
  return __m512i(_mm512_cvtne2ps_pbh(h, l));
}

// Rows [r0, r1) of packed A from a [m x k] (row stride lda).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_a_rows(const float* a, int64_t lda,
                                                                        int64_t m, int64_t k, uint16_t* ap,
                                                                        int64_t kp, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    uint16_t* dst = ap + r * kp;
    if (r >= m) {
      std::memset(dst, 0, size_t(kp) * 2);
      continue;
    }
    const float* src = a + r * lda;
    for (int64_t q = 0; q < kp; q += 32)
      _mm512_storeu_si512(dst + q, to_bf16(src + q, lanes(k - q), src + q + 16, lanes(k - q - 16)));
  }
}

// Rows [r0, r1) (multiples of 16) of packed A where A = a^T, a stored [k x m]:
// for 16 rows of A and 32 k, two rows of a at a time give each row's pair
// (k, k + 1); transposed, each vector is one row's 32 k (the rows of a read
// front to back).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_a_transposed(const float* a, int64_t lda,
                                                                              int64_t m, int64_t k,
                                                                              uint16_t* ap, int64_t kp,
                                                                              int64_t r0, int64_t r1) {
  __m512i v[16];
  for (int64_t q = 0; q < kp / 32; ++q)
    for (int64_t g = r0; g < r1; g += 16) {
      const __mmask16 rows = lanes(m - g);
      for (int p = 0; p < 16; ++p) {
        const int64_t k0 = 32 * q + 2 * p;
        v[p] = interleave_pairs(to_bf16(a + k0 * lda + g, k0 < k ? rows : __mmask16(0),
                                        a + (k0 + 1) * lda + g, k0 + 1 < k ? rows : __mmask16(0)));
      }
      transpose_16x16(v);
      for (int j = 0; j < 16; ++j) _mm512_storeu_si512(ap + (g + j) * kp + 32 * q, v[j]);
    }
}

// Column groups [j0, j1) (16 columns each) of packed B from b [k x n] (row stride ldb).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_b_rows(const float* b, int64_t ldb,
                                                                        int64_t n, int64_t k, uint16_t* bp,
                                                                        int64_t kp, int64_t j0, int64_t j1) {
  const int64_t kb = kp / 32;
  for (int64_t p = 0; p < kp / 2; ++p) {  // two rows of b at a time, front to back
    const int64_t k0 = 2 * p;
    for (int64_t j = j0; j < j1; ++j) {
      const __mmask16 cols = lanes(n - 16 * j);
      const float* src = b + k0 * ldb + 16 * j;
      const __m512i v =
          to_bf16(src, k0 < k ? cols : __mmask16(0), src + ldb, k0 + 1 < k ? cols : __mmask16(0));
      _mm512_storeu_si512(bp + (j * kb + p / 16) * kTile + (p % 16) * 32, interleave_pairs(v));
    }
  }
}

// Column groups [j0, j1) of packed B where B = b^T, b stored [n x k]: a row of b
// is one column of B, its 32 consecutive k already the 16 pairs a tile column
// holds; 16 of them transposed are the tile's rows.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_b_transposed(const float* b, int64_t ldb,
                                                                              int64_t n, int64_t k,
                                                                              uint16_t* bp, int64_t kp,
                                                                              int64_t j0, int64_t j1) {
  const int64_t kb = kp / 32;
  __m512i v[16];
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t q = 0; q < kb; ++q) {
      for (int c = 0; c < 16; ++c) {
        const int64_t col = 16 * j + c;
        const float* src = b + col * ldb + 32 * q;
        const bool inside = col < n;
        v[c] = to_bf16(src, inside ? lanes(k - 32 * q) : __mmask16(0), src + 16,
                       inside ? lanes(k - 32 * q - 16) : __mmask16(0));
      }
      transpose_16x16(v);
      uint16_t* tile = bp + (j * kb + q) * kTile;
      for (int p = 0; p < 16; ++p) _mm512_storeu_si512(tile + 32 * p, v[p]);
    }
}

// C blocks of 32 x 32 for row blocks [i0, i1): four accumulator tiles (0-3), two
// A tiles (4, 5) and two B tiles (6, 7) per step of 32 k.
// The accumulators start at 0, or at the bias row (np floats) where one is given.
__attribute__((target("amx-tile,amx-bf16"))) void multiply_blocks(const uint16_t* ap, const uint16_t* bp,
                                                                  const float* bias, int64_t kp, int64_t np,
                                                                  float* c, int64_t ldc, int64_t m, int64_t n,
                                                                  int64_t i0, int64_t i1) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.column_bytes[t] = 64;
  }
  _tile_loadconfig(&config);
  const int64_t kb = kp / 32, a_stride = kp * 2;
  alignas(64) float edge[32 * 32];
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = 0; j < np / 32; ++j) {
      if (bias) {  // row stride 0: every row of the tile is the same 16 entries
        _tile_loadd(0, bias + 32 * j, 0);
        _tile_loadd(1, bias + 32 * j + 16, 0);
        _tile_loadd(2, bias + 32 * j, 0);
        _tile_loadd(3, bias + 32 * j + 16, 0);
      } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      const uint16_t* a0 = ap + 32 * i * kp;
      const uint16_t* b0 = bp + 2 * j * kb * kTile;
      // The next block's first tiles: the next column pair with these rows, else the next rows' first pair.
      const bool last_column = j + 1 == np / 32;
      const uint16_t* next_a = last_column && i + 1 < i1 ? a0 + 32 * kp : a0;
      const uint16_t* next_b = last_column ? bp : b0 + 2 * kb * kTile;
      for (int64_t q = 0; q < kb; ++q) {
        // The next step's four tiles into L1 while these multiply (a tile load waits for the products
        // still reading its register, so its latency is not hidden otherwise): faster on the weight
        // gradients' long-k products, no change on the others (docs/performance.md).
        const bool more = q + 1 < kb;
        const uint16_t* pa = more ? a0 + 32 * (q + 1) : next_a;
        const uint16_t* pb = more ? b0 + (q + 1) * kTile : next_b;
        for (int r = 0; r < 16; ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(pb + 32 * r), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(pb + kb * kTile + 32 * r), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(pa + r * kp), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(pa + (16 + r) * kp), _MM_HINT_T0);
        }
        _tile_loadd(4, a0 + 32 * q, a_stride);
        _tile_loadd(6, b0 + q * kTile, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b0 + (kb + q) * kTile, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a0 + 16 * kp + 32 * q, a_stride);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      const int64_t rows = std::min<int64_t>(32, m - 32 * i), cols = std::min<int64_t>(32, n - 32 * j);
      const bool whole = rows == 32 && cols == 32;
      float* out = whole ? c + 32 * i * ldc + 32 * j : edge;
      const int64_t stride = whole ? ldc : 32;
      _tile_stored(0, out, stride * 4);
      _tile_stored(1, out + 16, stride * 4);
      _tile_stored(2, out + 16 * stride, stride * 4);
      _tile_stored(3, out + 16 * stride + 16, stride * 4);
      if (!whole)
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(c + (32 * i + r) * ldc + 32 * j, edge + r * 32, size_t(cols) * sizeof(float));
    }
  _tile_release();
}

// C rows [r0, r1) on AVX512-BF16 dot products, for CPUs without tiles (AMD Zen 4,
// Intel Cooper Lake): from the same packed operands, whose B rows are already the
// (k, k + 1) pairs VDPBF16PS multiplies. Register blocks of R rows by G groups of
// 16 columns: per pair of k, G loads of B and R broadcasts of A's pair for R x G
// instructions, each 32 multiply-adds with fp32 sums (twice the fp32 FMA's 16).
template <int R, int G>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void dot_block(
    const uint16_t* ap, int64_t kp, const uint16_t* bp, int64_t kb, const float* bias, float* c, int64_t ldc,
    int64_t m, int64_t n, int64_t r0, int64_t j0) {
  __m512 acc[R][G];
  for (int g = 0; g < G; ++g) {
    const __m512 start = bias ? _mm512_loadu_ps(bias + 16 * (j0 + g)) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) acc[r][g] = start;
  }
  for (int64_t pair = 0; pair < kp / 2; ++pair) {
    const int64_t q = pair / 16, p = pair % 16;
    __m512bh b[G];
    for (int g = 0; g < G; ++g)
      b[g] = (__m512bh)_mm512_loadu_si512(bp + ((j0 + g) * kb + q) * kTile + 32 * p);
    for (int r = 0; r < R; ++r) {
      uint32_t bits;
      std::memcpy(&bits, ap + (r0 + r) * kp + 2 * pair, 4);
      const __m512bh a = (__m512bh)_mm512_set1_epi32(int(bits));
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], a, b[g]);
    }
  }
  for (int r = 0; r < R && r0 + r < m; ++r)
    for (int g = 0; g < G; ++g)
      _mm512_mask_storeu_ps(c + (r0 + r) * ldc + 16 * (j0 + g), lanes(n - 16 * (j0 + g)), acc[r][g]);
}

template <int R>
void dot_rows(const uint16_t* ap, int64_t kp, const uint16_t* bp, int64_t np, const float* bias, float* c,
              int64_t ldc, int64_t m, int64_t n, int64_t r0) {
  const int64_t kb = kp / 32, groups = np / 16;  // np: a multiple of 32, so groups is even
  int64_t j = 0;
  for (; j + 4 <= groups; j += 4) dot_block<R, 4>(ap, kp, bp, kb, bias, c, ldc, m, n, r0, j);
  if (j < groups) dot_block<R, 2>(ap, kp, bp, kb, bias, c, ldc, m, n, r0, j);
}

void multiply_rows_dot(const uint16_t* ap, const uint16_t* bp, const float* bias, int64_t kp, int64_t np,
                       float* c, int64_t ldc, int64_t m, int64_t n, int64_t r0, int64_t r1) {
  r1 = std::min(r1, m);  // padded rows are zeros: nothing to store
  int64_t r = r0;
  for (; r + 6 <= r1; r += 6) dot_rows<6>(ap, kp, bp, np, bias, c, ldc, m, n, r);
  switch (r1 - r) {
    case 5: return dot_rows<5>(ap, kp, bp, np, bias, c, ldc, m, n, r);
    case 4: return dot_rows<4>(ap, kp, bp, np, bias, c, ldc, m, n, r);
    case 3: return dot_rows<3>(ap, kp, bp, np, bias, c, ldc, m, n, r);
    case 2: return dot_rows<2>(ap, kp, bp, np, bias, c, ldc, m, n, r);
    case 1: return dot_rows<1>(ap, kp, bp, np, bias, c, ldc, m, n, r);
    default: return;
  }
}

// The packed operands of the calling thread's products: kept and grown, not
// allocated per call (fresh pages cost a fault each; a step makes 70 products).
class Scratch {
 public:
  void* get(size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      bytes = (bytes + 63) / 64 * 64;  // aligned_alloc takes whole multiples of the alignment
      data_ = std::aligned_alloc(64, bytes);
      size_ = data_ ? bytes : 0;
      if (!data_)
        throw Error("out of memory for a bfloat16 product's operands (" + std::to_string(bytes) + " bytes)");
    }
    return data_;
  }
  ~Scratch() { std::free(data_); }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// AVX512-BF16 (CPUID 7.1 EAX bit 5) with AVX512-BW, and AMX-TILE, AMX-BF16 (7.0 EDX
// bits 24, 22), read directly: older compilers' __builtin_cpu_supports knows none of
// these names.
bool cpu_has_bf16_dots() {
  static const bool has = [] {  // asked once: CPUID traps to the hypervisor in a VM
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5))) return false;
    return bool(__builtin_cpu_supports("avx512bw"));
  }();
  return has;
}
bool cpu_has_tiles() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22))) return false;
  return cpu_has_bf16_dots();
}

// The tile state must be requested from Linux once per process (ARCH_REQ_XCOMP_PERM);
// 0 when granted, else the errno of the refusal (-1: the CPU has no tiles).
int tile_refusal() {
  static const int refusal = [] {
    if (!cpu_has_tiles()) return -1;
    constexpr long kRequestPermission = 0x1023, kTileData = 18;
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0 ? 0 : errno;
  }();
  return refusal;
}
#endif

}  // namespace

// Whether the CPU has tiles and Linux grants them.
static bool tiles_usable() {
#ifdef TRANSLUTION_AMX
  return tile_refusal() == 0;
#else
  return false;
#endif
}

bool bf16_gemm_available() {
#ifdef TRANSLUTION_AMX
  return tiles_usable() || cpu_has_bf16_dots();
#else
  return false;
#endif
}

const char* bf16_gemm_kernel(bool tiles) {
  if (tiles && tiles_usable()) return "amx";
  return bf16_gemm_available() ? "avx512-bf16" : "none";
}

std::string bf16_gemm_unavailable_reason() {
  if (bf16_gemm_available()) return "";
#ifdef TRANSLUTION_AMX
  // A CPU with tiles has the dot products too: where Linux refuses the tiles, those run.
  return "this CPU has neither AMX bfloat16 tiles (Intel Xeon from Sapphire Rapids on) nor AVX512-BF16 "
         "(AMD Zen 4 on, Intel Cooper Lake)";
#else
  return "this build has no AMX kernels (x86-64 Linux with GCC 11 or Clang 12 on is needed)";
#endif
}

void bf16_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc, Bf16Run run, const float* bias) {
  if (m <= 0 || n <= 0) return;
  if (!bf16_gemm_available()) throw Error("bfloat16 products: " + bf16_gemm_unavailable_reason());
#ifdef TRANSLUTION_AMX
  const int64_t mp = round_up(m, 32), np = round_up(n, 32), kp = round_up(std::max<int64_t>(k, 1), 32);
  thread_local Scratch scratch;
  const size_t a_bytes = size_t(mp * kp * 2), b_bytes = size_t(np * kp * 2);
  uint16_t* ap = static_cast<uint16_t*>(scratch.get(a_bytes + b_bytes + size_t(np) * sizeof(float)));
  uint16_t* bp = ap + mp * kp;
  float* padded_bias = nullptr;
  if (bias) {  // the tiles read 32 entries per block: padded with zeros past n
    padded_bias = reinterpret_cast<float*>(bp + np * kp);
    std::memcpy(padded_bias, bias, size_t(n) * sizeof(float));
    std::fill(padded_bias + n, padded_bias + np, 0.0f);
  }
  const int64_t row_blocks = mp / 32;
  const int parts = int(std::max<int64_t>(1, std::min<int64_t>(run.parts, row_blocks)));
  // Each part packs a share of both operands, then (all packed) multiplies a share of C's row blocks.
  run_parts(parts, [&](int p) {
    const int64_t g0 = mp / 16 * p / parts * 16, g1 = mp / 16 * (p + 1) / parts * 16;
    if (trans_a)
      pack_a_transposed(a, lda, m, k, ap, kp, g0, g1);
    else
      pack_a_rows(a, lda, m, k, ap, kp, g0, g1);
    const int64_t j0 = np / 16 * p / parts, j1 = np / 16 * (p + 1) / parts;
    if (trans_b)
      pack_b_transposed(b, ldb, n, k, bp, kp, j0, j1);
    else
      pack_b_rows(b, ldb, n, k, bp, kp, j0, j1);
  });
  const bool tiles = run.tiles && tiles_usable();
  run_parts(parts, [&](int p) {
    const int64_t i0 = row_blocks * p / parts, i1 = row_blocks * (p + 1) / parts;
    if (tiles)
      multiply_blocks(ap, bp, padded_bias, kp, np, c, ldc, m, n, i0, i1);
    else
      multiply_rows_dot(ap, bp, padded_bias, kp, np, c, ldc, m, n, 32 * i0, 32 * i1);
  });
#else
  unused(trans_a, trans_b, k, a, lda, b, ldb, c, ldc, run, bias);
#endif
}

Bf16Run bf16_run(const EngineOptions& engine) {
  return {matrix_threads(engine) > 0 ? matrix_threads(engine) : free_cores(), engine.bf16_tiles};
}

float round_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t exponent = u & 0x7F800000u;
  if (exponent == 0x7F800000u && (u & 0x007FFFFFu))
    u |= 0x00400000u;  // NaN: quiet, stays NaN
  else if (exponent == 0)
    u &= 0x80000000u;  // subnormal: zero, as the hardware's conversion flushes it
  else
    u += 0x7FFFu + ((u >> 16) & 1u);  // to nearest, ties to even
  u &= 0xFFFF0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

bool valid_dense_precision_name(const std::string& name) { return name == "fp32" || name == "bf16"; }

DensePrecision parse_dense_precision(const std::string& name) {
  if (name == "fp32") return DensePrecision::Fp32;
  if (name == "bf16") {
    if (!bf16_gemm_available())
      throw Error("precision bf16 needs bfloat16 products: " + bf16_gemm_unavailable_reason() +
                  "; use precision fp32 (--precision fp32)");
    return DensePrecision::Bf16;
  }
  throw Error("unknown precision '" + name + "' (expected fp32 or bf16)");
}

const char* dense_precision_name(DensePrecision precision) {
  return precision == DensePrecision::Bf16 ? "bf16" : "fp32";
}

}  // namespace translution
