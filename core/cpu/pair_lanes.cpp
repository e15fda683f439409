#include "cpu/pair_lanes.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TRANSLUTION_PAIR_LANES 1
#include <immintrin.h>
#endif

#include <ATen/ATen.h>

#include "cpu/helper_threads.h"
#include "cpu/kernel_observer.h"
#include "cpu/pair_kernels.h"
#include "cpu/pair_matrices.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/unused.h"

namespace translution {
namespace {

constexpr int64_t kLanes = 16;  // floats in a 512-bit vector: the images of one group

// One side's raw view for the kernels.
struct LaneSide {
  const float* x = nullptr;       // the input in lanes, [G, T, C, 16]
  const float* w = nullptr;       // the bank [E, C, D]; null: a plain side, whose rows are its inputs (C = D)
  const int64_t* rows = nullptr;  // the token of each sorted row
  int64_t T = 0, C = 0, D = 0;
  const float* matrix(int64_t e) const { return w ? w + e * C * D : nullptr; }
  const float* input(int64_t g, int64_t r) const { return x + (g * T + rows[r]) * C * kLanes; }
};

// Matrix e's sorted rows [o, o + n), over G groups of images; R rows in all.
struct Block {
  int64_t e, o, n, G, R;
};

#ifdef TRANSLUTION_PAIR_LANES
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored \
    "-Wmaybe-uninitialized"  // GCC 12's own intrinsics (their undefined pass-through)
namespace kernels {

inline __m512 load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }

// out[d] = sum_c x[c] w[c ld + d] for d < W (written, not added): W accumulators,
// w's entries broadcast. next: the input of C vectors the caller projects next
// (streamed into L1 meanwhile; a group's inputs, 50 tokens x 24 channels x 16
// images, are more than L1 holds), or null.
template <int W>
inline void project_chunk(const float* x, int64_t C, const float* w, int64_t ld, float* out,
                          const float* next) {
  __m512 acc[W];
#pragma GCC unroll 32
  for (int d = 0; d < W; ++d) acc[d] = _mm512_setzero_ps();
  for (int64_t c = 0; c < C; ++c) {
    if (next) _mm_prefetch(reinterpret_cast<const char*>(next + c * kLanes), _MM_HINT_T0);
    const __m512 xc = load(x + c * kLanes);
    const float* wc = w + c * ld;
#pragma GCC unroll 32
    for (int d = 0; d < W; ++d) acc[d] = _mm512_fmadd_ps(_mm512_set1_ps(wc[d]), xc, acc[d]);
  }
#pragma GCC unroll 32
  for (int d = 0; d < W; ++d) store(out + d * kLanes, acc[d]);
}

// out = x w for one row: C inputs, D outputs (multiples of 8, at most 32). The
// input gradient's x w^T, added to its rows, is project_transposed's.
inline void project(const float* x, int64_t C, const float* w, int64_t D, float* out, const float* next) {
  int64_t d = 0;
  for (; d + 24 <= D; d += 24, next = nullptr) project_chunk<24>(x, C, w + d, D, out + d * kLanes, next);
  if (D - d == 16) project_chunk<16>(x, C, w + d, D, out + d * kLanes, next);
  if (D - d == 8) project_chunk<8>(x, C, w + d, D, out + d * kLanes, next);
}

// out[o] += sum_i x[i] w[o Ld + i] for o < W: project_chunk reading w's columns
// (x w^T). With Ld known when compiling, output o's entries sit at a fixed offset
// from one pointer that steps by one float, so w needs no transposed copy, which
// would cost a share of side_backward's time for every matrix.
template <int W, int Ld>
inline void project_chunk_columns(const float* x, int64_t n, const float* w, float* out) {
  __m512 acc[W];
#pragma GCC unroll 32
  for (int o = 0; o < W; ++o) acc[o] = load(out + o * kLanes);
  for (int64_t i = 0; i < n; ++i) {
    const __m512 xi = load(x + i * kLanes);
#pragma GCC unroll 32
    for (int o = 0; o < W; ++o) acc[o] = _mm512_fmadd_ps(_mm512_set1_ps(w[o * Ld + i]), xi, acc[o]);
  }
#pragma GCC unroll 32
  for (int o = 0; o < W; ++o) store(out + o * kLanes, acc[o]);
}

// out += x w^T for one row, w [C, Ld]: Ld inputs, C outputs (C multiple of 8, at most 32).
template <int Ld>
inline void project_columns(const float* x, const float* w, int64_t C, float* out) {
  int64_t c = 0;
  for (; c + 24 <= C; c += 24) project_chunk_columns<24, Ld>(x, Ld, w + c * Ld, out + c * kLanes);
  if (C - c == 16) project_chunk_columns<16, Ld>(x, Ld, w + c * Ld, out + c * kLanes);
  if (C - c == 8) project_chunk_columns<8, Ld>(x, Ld, w + c * Ld, out + c * kLanes);
}

// out += x w^T, w [C, D] (D a multiple of 8, at most 32: pair_lanes_apply).
inline void project_transposed(const float* x, const float* w, int64_t C, int64_t D, float* out) {
  switch (D) {
    case 8: return project_columns<8>(x, w, C, out);
    case 16: return project_columns<16>(x, w, C, out);
    case 24: return project_columns<24>(x, w, C, out);
    default: return project_columns<32>(x, w, C, out);
  }
}

// Lane i of the result: the sum of v[i]'s 16 lanes (a transposing tree: 45
// instructions for 16 sums, where one reduction each takes about 10).
inline __m512 sum_each(const __m512 v[16]) {
  __m512 w[8], x[4];
  for (int j = 0; j < 8; ++j)
    w[j] =
        _mm512_add_ps(_mm512_unpacklo_ps(v[2 * j], v[2 * j + 1]), _mm512_unpackhi_ps(v[2 * j], v[2 * j + 1]));
  for (int j = 0; j < 4; ++j) {
    const __m512d a = _mm512_castps_pd(w[2 * j]), b = _mm512_castps_pd(w[2 * j + 1]);
    x[j] =
        _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  const __m512 z0 =
      _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], 0x88), _mm512_shuffle_f32x4(x[0], x[1], 0xDD));
  const __m512 z1 =
      _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], 0x88), _mm512_shuffle_f32x4(x[2], x[3], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(z0, z1, 0x88), _mm512_shuffle_f32x4(z0, z1, 0xDD));
}

// dw[c][d] = sum over the block's rows, groups and lanes of x[c] ds[d] (written,
// not added): 4 x 4 register blocks, reduced once per block of entries.
void weight_gradient(const LaneSide& s, const Block& b, const float* ds, float* dw) {
  const int64_t C = s.C, D = s.D;
  for (int64_t c0 = 0; c0 < C; c0 += 4)
    for (int64_t d0 = 0; d0 < D; d0 += 4) {
      __m512 acc[16];
      for (__m512& a : acc) a = _mm512_setzero_ps();
      for (int64_t g = 0; g < b.G; ++g)
        for (int64_t k = 0; k < b.n; ++k) {
          const float* x = s.input(g, b.o + k) + c0 * kLanes;
          const float* gd = ds + ((g * b.n + k) * D + d0) * kLanes;
          const __m512 x0 = load(x), x1 = load(x + kLanes), x2 = load(x + 2 * kLanes),
                       x3 = load(x + 3 * kLanes);
#pragma GCC unroll 4
          for (int d = 0; d < 4; ++d) {
            const __m512 g_d = load(gd + d * kLanes);
            acc[d] = _mm512_fmadd_ps(x0, g_d, acc[d]);
            acc[4 + d] = _mm512_fmadd_ps(x1, g_d, acc[4 + d]);
            acc[8 + d] = _mm512_fmadd_ps(x2, g_d, acc[8 + d]);
            acc[12 + d] = _mm512_fmadd_ps(x3, g_d, acc[12 + d]);
          }
        }
      const __m512 sums = sum_each(acc);  // lane 4 c + d: entry (c0 + c, d0 + d)
      _mm_storeu_ps(dw + (c0 + 0) * D + d0, _mm512_extractf32x4_ps(sums, 0));
      _mm_storeu_ps(dw + (c0 + 1) * D + d0, _mm512_extractf32x4_ps(sums, 1));
      _mm_storeu_ps(dw + (c0 + 2) * D + d0, _mm512_extractf32x4_ps(sums, 2));
      _mm_storeu_ps(dw + (c0 + 3) * D + d0, _mm512_extractf32x4_ps(sums, 3));
    }
}

// Pair-ordered planes [B H, R] (pair_blocks' layout of the logits, alpha and their
// gradients): group g's 16 images at row r and head h, gathered into one vector
// or scattered from it. A block's rows are consecutive, so each of the 16 H planes
// is written or read in order.
struct Planes {
  Planes(const float* planes, int64_t H, int64_t R)
      : p(const_cast<float*>(planes)),
        H(H),
        R(R),
        index(_mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                 _mm512_set1_epi32(int(H * R)))) {}
  float* at(int64_t g, int64_t r, int64_t h) const { return p + (g * kLanes * H + h) * R + r; }
  __m512 get(int64_t g, int64_t r, int64_t h) const { return _mm512_i32gather_ps(index, at(g, r, h), 4); }
  void put(int64_t g, int64_t r, int64_t h, __m512 v) const {
    _mm512_i32scatter_ps(at(g, r, h), index, v, 4);
  }
  float* p;
  int64_t H, R;
  __m512i index;  // lane l: l H R
};

// Side s's row r of group g: the plain side's input, else projected into tmp.
const float* side_row(const LaneSide& s, const Block& b, int64_t g, int64_t r, float* tmp) {
  const float* x = s.input(g, r);
  if (!s.w) return x;
  const bool more = r + 1 < b.o + b.n;
  project(x, s.C, s.matrix(b.e), s.D, tmp, more ? s.input(g, r + 1) : nullptr);
  return tmp;
}

// Given ds for the block's rows ([G, n, D, 16]): the inputs' gradients added into
// dx ([G, T, C, 16]) and, for a relative side, matrix e's gradient written into dw.
void side_backward(const LaneSide& s, const Block& b, const float* ds, float* dx, float* dw) {
  const float* w = s.matrix(b.e);
  for (int64_t g = 0; g < b.G; ++g)
    for (int64_t k = 0; k < b.n; ++k) {
      float* dxt = dx + (g * s.T + s.rows[b.o + k]) * s.C * kLanes;
      const float* d = ds + (g * b.n + k) * s.D * kLanes;
      if (w) {
        if (k + 1 < b.n) {  // the next row's dx, into L1 meanwhile
          const float* next = dx + (g * s.T + s.rows[b.o + k + 1]) * s.C * kLanes;
          for (int64_t c = 0; c < s.C; ++c)
            _mm_prefetch(reinterpret_cast<const char*>(next + c * kLanes), _MM_HINT_T0);
        }
        project_transposed(d, w, s.C, s.D, dxt);
      } else {
        for (int64_t c = 0; c < s.C; ++c)
          store(dxt + c * kLanes, _mm512_add_ps(load(dxt + c * kLanes), load(d + c * kLanes)));
      }
    }
  if (w) weight_gradient(s, b, ds, dw + b.e * s.C * s.D);
}

// logits[b, h, r] = Q_h . K_h for the block's rows (vertical: one vector per head).
void logits_block(const LaneSide& q, const LaneSide& k, const Block& b, int64_t H, float* logits,
                  float* tmp) {
  const int64_t D = q.D, w = D / H;
  const Planes out(logits, H, b.R);
  for (int64_t g = 0; g < b.G; ++g)
    for (int64_t r = b.o; r < b.o + b.n; ++r) {
      const float* Q = side_row(q, b, g, r, tmp);
      const float* K = side_row(k, b, g, r, tmp + D * kLanes);
      for (int64_t h = 0; h < H; ++h) {
        __m512 s = _mm512_setzero_ps();
        for (int64_t d = h * w; d < (h + 1) * w; ++d)
          s = _mm512_fmadd_ps(load(Q + d * kLanes), load(K + d * kLanes), s);
        out.put(g, r, h, s);
      }
    }
}

// Given the logits' gradient (planes): dQ_h = g_h K_h and dK_h = g_h Q_h,
// then both sides' input and matrix gradients. scratch: 2 G n D + 2 D vectors.
void logits_block_backward(const LaneSide& q, const LaneSide& k, const Block& b, int64_t H, const float* grad,
                           float* dqx, float* dkx, float* dqw, float* dkw, float* scratch) {
  const int64_t D = q.D, w = D / H, rows = b.G * b.n * D * kLanes;
  float *dQ = scratch, *dK = scratch + rows, *tmp = scratch + 2 * rows;
  const Planes planes(grad, H, b.R);
  for (int64_t g = 0; g < b.G; ++g)
    for (int64_t i = 0; i < b.n; ++i) {
      const int64_t r = b.o + i;
      const float* Q = side_row(q, b, g, r, tmp);
      const float* K = side_row(k, b, g, r, tmp + D * kLanes);
      float *dq = dQ + (g * b.n + i) * D * kLanes, *dk = dK + (g * b.n + i) * D * kLanes;
      for (int64_t h = 0; h < H; ++h) {
        const __m512 gh = planes.get(g, r, h);
        for (int64_t d = h * w; d < (h + 1) * w; ++d) {
          store(dq + d * kLanes, _mm512_mul_ps(gh, load(K + d * kLanes)));
          store(dk + d * kLanes, _mm512_mul_ps(gh, load(Q + d * kLanes)));
        }
      }
    }
  side_backward(q, b, dQ, dqx, dqw);
  side_backward(k, b, dK, dkx, dkw);
}

// out[g, query(r), h] += alpha[g, r, h] V(r)_h: head h's slice (sliced, w = D / H) or all of V (w = D).
void values_block(const LaneSide& v, const Block& b, const int64_t* query, int64_t M, int64_t H, bool sliced,
                  const float* alpha, float* out, float* tmp) {
  const int64_t D = v.D, w = sliced ? D / H : D;
  const Planes a(alpha, H, b.R);
  for (int64_t g = 0; g < b.G; ++g)
    for (int64_t r = b.o; r < b.o + b.n; ++r) {
      const float* V = side_row(v, b, g, r, tmp);
      float* o = out + (g * M + query[r]) * H * w * kLanes;
      for (int64_t h = 0; h < H; ++h) {
        const __m512 ah = a.get(g, r, h);
        const float* vh = V + (sliced ? h * w : 0) * kLanes;
        float* oh = o + h * w * kLanes;
        for (int64_t d = 0; d < w; ++d)
          store(oh + d * kLanes, _mm512_fmadd_ps(ah, load(vh + d * kLanes), load(oh + d * kLanes)));
      }
    }
}

// Given out's gradient ([G, M, H, w, 16]): dalpha[b, h, r] = dout_h . V_h and dV,
// then the input's and the matrix's gradients. scratch: G n D + D vectors.
void values_block_backward(const LaneSide& v, const Block& b, const int64_t* query, int64_t M, int64_t H,
                           bool sliced, const float* alpha, const float* dout, float* dalpha, float* dx,
                           float* dw, float* scratch) {
  const int64_t D = v.D, w = sliced ? D / H : D;
  float *dV = scratch, *tmp = scratch + b.G * b.n * D * kLanes;
  const Planes alphas(alpha, H, b.R), dalphas(dalpha, H, b.R);
  __m512 a[32];  // alpha per head (pair_lanes_apply: H <= 32)
  for (int64_t g = 0; g < b.G; ++g)
    for (int64_t i = 0; i < b.n; ++i) {
      const int64_t r = b.o + i;
      const float* V = side_row(v, b, g, r, tmp);
      const float* go = dout + (g * M + query[r]) * H * w * kLanes;
      float* dv = dV + (g * b.n + i) * D * kLanes;
      for (int64_t h = 0; h < H; ++h) {
        const float* vh = V + (sliced ? h * w : 0) * kLanes;
        const float* gh = go + h * w * kLanes;
        __m512 s = _mm512_setzero_ps();
        for (int64_t d = 0; d < w; ++d) s = _mm512_fmadd_ps(load(gh + d * kLanes), load(vh + d * kLanes), s);
        dalphas.put(g, r, h, s);
        a[h] = alphas.get(g, r, h);
      }
      if (sliced) {
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < w; ++d)
            store(dv + (h * w + d) * kLanes, _mm512_mul_ps(a[h], load(go + (h * w + d) * kLanes)));
      } else {
        for (int64_t d = 0; d < D; ++d) {
          __m512 s = _mm512_mul_ps(a[0], load(go + d * kLanes));
          for (int64_t h = 1; h < H; ++h) s = _mm512_fmadd_ps(a[h], load(go + (h * w + d) * kLanes), s);
          store(dv + d * kLanes, s);
        }
      }
    }
  side_backward(v, b, dV, dx, dw);
}

}  // namespace kernels
#pragma GCC diagnostic pop
#pragma GCC pop_options

Block block(const PairTable& t, size_t e, int64_t G) {
  const int64_t o = (*t.offset)[e];
  return {int64_t(e), o, (*t.offset)[e + 1] - o, G, t.offset->back()};
}

// [T, B, K...] -> [B / 16, T, K, 16]: each group's images across the lanes.
at::Tensor to_lanes(const at::Tensor& rows_in) {
  const at::Tensor rows = rows_in.contiguous();
  const int64_t T = rows.size(0), B = rows.size(1), K = rows.numel() / (T * B), G = B / kLanes;
  at::Tensor out = at::empty({G, T, K, kLanes}, rows.options());
  const float* src = rows.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      const float* s = src + (t * B + b) * K;
      float* d = dst + ((b / kLanes) * T + t) * K * kLanes + b % kLanes;
      for (int64_t k = 0; k < K; ++k) d[k * kLanes] = s[k];
    }
  return out;
}

// The parts' sum of [P, B / 16, T, K, 16] as `shape` ([T, B, ...], K values per (t, b)).
at::Tensor from_lanes(const at::Tensor& lanes, at::IntArrayRef shape) {
  const int64_t P = lanes.size(0), G = lanes.size(1), T = lanes.size(2), K = lanes.size(3), B = G * kLanes;
  at::Tensor out = at::empty(shape, lanes.options());
  const float* src = lanes.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  const int64_t part = G * T * K * kLanes;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      const float* s = src + ((b / kLanes) * T + t) * K * kLanes + b % kLanes;
      float* d = dst + (t * B + b) * K;
      for (int64_t k = 0; k < K; ++k) {
        float sum = s[k * kLanes];
        for (int64_t p = 1; p < P; ++p) sum += s[p * part + k * kLanes];
        d[k] = sum;
      }
    }
  return out;
}

LaneSide lane_side(const PairSide& s, const at::Tensor& x) {
  LaneSide l;
  l.x = x.data_ptr<float>();
  l.w = s.relative() ? s.bank.data_ptr<float>() : nullptr;
  l.rows = s.rows;
  l.T = s.xt.size(0);
  l.C = s.xt.size(2);
  l.D = s.width();
  return l;
}

float* data_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }
#endif  // TRANSLUTION_PAIR_LANES

}  // namespace

bool pair_lanes_apply(const PairTable& table, int64_t heads, std::initializer_list<const PairSide*> sides) {
#ifdef TRANSLUTION_PAIR_LANES
  if (table.engine.reference || !cpu_has_avx512()) return false;
  // The gathers' and scatters' 32-bit offsets reach 15 H R values into the planes;
  // the values' backward holds alpha for every head in registers.
  if (heads > 32 || kLanes * heads * table.offset->back() > std::numeric_limits<int32_t>::max()) return false;
  for (const PairSide* s : sides) {
    const int64_t C = s->xt.size(2), D = s->width();
    const int64_t B = s->xt.size(1);
    if (s->xt.scalar_type() != at::kFloat || s->bf16 || s->w16 || B == 0 || B % kLanes != 0) return false;
    if (C % 8 != 0 || D % 8 != 0 || C > 32 || D > 32) return false;
  }
  return true;
#else
  unused(table, heads, sides);
  return false;
#endif
}

bool pair_lanes_backward(const PairTable& table, int64_t heads,
                         std::initializer_list<const PairSide*> sides) {
  for (const PairSide* s : sides)
    if (s->saved.defined()) return false;  // the blocked path's rows: its forward ran there
  return pair_lanes_apply(table, heads, sides);
}

#ifdef TRANSLUTION_PAIR_LANES
at::Tensor lanes_logits(const PairTable& t, PairSide& q, PairSide& k, int64_t H) {
  report_kernel(Kernel::PairLanes);
  const int64_t B = q.xt.size(1), G = B / kLanes, D = q.width(), R = t.offset->back();
  const at::Tensor xq = to_lanes(q.xt), xk = to_lanes(k.xt);
  for (PairSide* s : {&q, &k}) s->saved = at::Tensor();       // nothing kept: backward projects again
  at::Tensor logits = at::empty({B * H, R}, q.xt.options());  // pair-ordered planes
  const LaneSide lq = lane_side(q, xq), lk = lane_side(k, xk);
  const int parts = block_parts(t, {&q, &k});
  const int64_t per_part = 2 * D * kLanes;
  const Scratch scratch(parts, per_part, sizeof(float));
  float* out = logits.data_ptr<float>();
  for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
    for (size_t e = first; e < last; ++e) {
      const Block b = block(t, e, G);
      if (b.n > 0) kernels::logits_block(lq, lk, b, H, out, scratch.part<float>(part));
    }
  });
  return planes_to_grid(t, logits, B, H);
}

std::array<at::Tensor, 4> lanes_logits_backward(const PairTable& t, const PairSide& q, const PairSide& k,
                                                const at::Tensor& grad) {
  report_kernel(Kernel::PairLanes);
  const int64_t B = q.xt.size(1), G = B / kLanes, D = q.width(), H = grad.size(1);
  const at::Tensor g = grid_to_planes(t, grad), xq = to_lanes(q.xt), xk = to_lanes(k.xt);
  const LaneSide lq = lane_side(q, xq), lk = lane_side(k, xk);
  const int parts = block_parts(t, {&q, &k});
  // Each part adds into its own input gradients (fixed ranges of matrices: the same sums every run).
  at::Tensor dq = at::zeros({parts, G, lq.T, lq.C, kLanes}, q.xt.options());
  at::Tensor dk = at::zeros({parts, G, lk.T, lk.C, kLanes}, k.xt.options());
  at::Tensor dq_bank = q.relative() ? bank_gradient_buffer(q.bank, *t.offset) : at::Tensor();
  at::Tensor dk_bank = k.relative() ? bank_gradient_buffer(k.bank, *t.offset) : at::Tensor();
  const int64_t per_part = (2 * most_rows(*t.offset) * G + 2) * D * kLanes;
  const Scratch scratch(parts, per_part, sizeof(float));
  const float* gp = g.data_ptr<float>();
  float *dqw = data_or_null(dq_bank), *dkw = data_or_null(dk_bank);
  for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
    float* dqx = dq.data_ptr<float>() + part * dq.stride(0);
    float* dkx = dk.data_ptr<float>() + part * dk.stride(0);
    for (size_t e = first; e < last; ++e) {
      const Block b = block(t, e, G);
      if (b.n > 0)
        kernels::logits_block_backward(lq, lk, b, H, gp, dqx, dkx, dqw, dkw, scratch.part<float>(part));
    }
  });
  return {from_lanes(dq, q.xt.sizes()), dq_bank, from_lanes(dk, k.xt.sizes()), dk_bank};
}

at::Tensor lanes_values(const PairTable& t, const at::Tensor& alpha, PairSide& v, bool head_sliced,
                        at::Tensor* alpha_planes) {
  report_kernel(Kernel::PairLanes);
  const int64_t B = alpha.size(0), H = alpha.size(1), M = t.queries, G = B / kLanes, D = v.width();
  const int64_t w = head_sliced ? D / H : D;
  const at::Tensor a = grid_to_planes(t, alpha), xv = to_lanes(v.xt);
  if (alpha_planes) *alpha_planes = a;
  v.saved = at::Tensor();  // nothing kept: backward projects again
  const LaneSide lv = lane_side(v, xv);
  const int parts = block_parts(t, {&v});
  // Rows of different matrices add into the same query: each part into its own output.
  at::Tensor out = at::zeros({parts, G, M, H * w, kLanes}, v.xt.options());
  const int64_t per_part = D * kLanes;
  const Scratch scratch(parts, per_part, sizeof(float));
  const float* ap = a.data_ptr<float>();
  for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
    float* o = out.data_ptr<float>() + part * out.stride(0);
    for (size_t e = first; e < last; ++e) {
      const Block b = block(t, e, G);
      if (b.n > 0) kernels::values_block(lv, b, t.query, M, H, head_sliced, ap, o, scratch.part<float>(part));
    }
  });
  return from_lanes(out, {M, B, H, w});
}

std::array<at::Tensor, 3> lanes_values_backward(const PairTable& t, const at::Tensor& alpha,
                                                const PairSide& v, const at::Tensor& dout, bool head_sliced) {
  report_kernel(Kernel::PairLanes);
  const int64_t B = dout.size(1), H = dout.size(2), M = t.queries, G = B / kLanes, D = v.width();
  const int64_t R = t.offset->back();
  const at::Tensor go = to_lanes(dout), xv = to_lanes(v.xt);
  const LaneSide lv = lane_side(v, xv);
  const int parts = block_parts(t, {&v});
  at::Tensor dalpha = at::empty({B * H, R}, alpha.options());  // every row is some matrix's
  at::Tensor dx = at::zeros({parts, G, lv.T, lv.C, kLanes}, v.xt.options());
  at::Tensor dbank = v.relative() ? bank_gradient_buffer(v.bank, *t.offset) : at::Tensor();
  const int64_t per_part = (most_rows(*t.offset) * G + 1) * D * kLanes;
  const Scratch scratch(parts, per_part, sizeof(float));
  const float *ap = alpha.data_ptr<float>(), *gp = go.data_ptr<float>();
  float *dap = dalpha.data_ptr<float>(), *dw = data_or_null(dbank);
  for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
    float* dxp = dx.data_ptr<float>() + part * dx.stride(0);
    for (size_t e = first; e < last; ++e) {
      const Block b = block(t, e, G);
      if (b.n > 0)
        kernels::values_block_backward(lv, b, t.query, M, H, head_sliced, ap, gp, dap, dxp, dw,
                                       scratch.part<float>(part));
    }
  });
  return {planes_to_grid(t, dalpha, B, H), from_lanes(dx, v.xt.sizes()), dbank};
}
#else
// pair_lanes_apply is false without the AVX-512 kernels: nothing calls these.
at::Tensor lanes_logits(const PairTable&, PairSide&, PairSide&, int64_t) {
  throw Error("internal: the lanes path needs AVX-512 kernels this build lacks");
}
std::array<at::Tensor, 4> lanes_logits_backward(const PairTable&, const PairSide&, const PairSide&,
                                                const at::Tensor&) {
  throw Error("internal: the lanes path needs AVX-512 kernels this build lacks");
}
at::Tensor lanes_values(const PairTable&, const at::Tensor&, PairSide&, bool, at::Tensor*) {
  throw Error("internal: the lanes path needs AVX-512 kernels this build lacks");
}
std::array<at::Tensor, 3> lanes_values_backward(const PairTable&, const at::Tensor&, const PairSide&,
                                                const at::Tensor&, bool) {
  throw Error("internal: the lanes path needs AVX-512 kernels this build lacks");
}
#endif

}  // namespace translution
