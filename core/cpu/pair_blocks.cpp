#include "cpu/pair_blocks.h"

#include <algorithm>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TRANSLUTION_PAIR_BLOCKS_AVX512 1
#include <immintrin.h>
#endif

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "cpu/bf16_gemm.h"
#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/kernel_observer.h"
#include "cpu/pair_kernels.h"
#include "cpu/pair_lanes.h"
#include "cpu/pair_matrices.h"
#include "cpu/short_vectors.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"

namespace translution {
namespace {

namespace portable {
#include "cpu/pair_block_loops.inc"
}  // namespace portable

#ifdef TRANSLUTION_PAIR_BLOCKS_AVX512
// The same loops with 16-lane helpers: the per-head slices are 8 to 64 floats
// (LoR's 8 and 24), too short for the portable loops' vectorisation (SSE2 here)
// to pay: those loops would take as long as the products around them.
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored \
    "-Wmaybe-uninitialized"  // GCC 12's own intrinsics (their undefined pass-through)
namespace avx512 {
// A tail of eight (LoR's slices: 8, 24) goes through 256-bit registers: a masked
// store read back soon after cannot forward to the load and stalls it.

inline float sum8(__m256 v) {
  __m128 four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  four = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(four, _mm_movehdup_ps(four)));
}

inline float dot(const float* x, const float* y, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc);
  __m256 low = _mm256_add_ps(_mm512_castps512_ps256(acc),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
  if (i + 8 <= n) {
    low = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), low);
    i += 8;
  }
  float total = sum8(low);
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

inline void axpy(float* y, float a, const float* x, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i + 8 <= n) {
    _mm256_storeu_ps(
        y + i, _mm256_fmadd_ps(_mm512_castps512_ps256(av), _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    i += 8;
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

inline void scaled(float* y, float a, const float* x, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(av, _mm512_loadu_ps(x + i)));
  if (i + 8 <= n) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm512_castps512_ps256(av), _mm256_loadu_ps(x + i)));
    i += 8;
  }
  for (; i < n; ++i) y[i] = a * x[i];
}

// y = sum_h a[h] x[h stride ...], summed in registers rather than by an axpy per head.
inline void weighted_sum(float* y, const float* a, const float* x, int64_t heads, int64_t stride, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 acc = _mm512_mul_ps(_mm512_set1_ps(a[0]), _mm512_loadu_ps(x + i));
    for (int64_t h = 1; h < heads; ++h)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(a[h]), _mm512_loadu_ps(x + h * stride + i), acc);
    _mm512_storeu_ps(y + i, acc);
  }
  if (i + 8 <= n) {
    __m256 acc = _mm256_mul_ps(_mm256_set1_ps(a[0]), _mm256_loadu_ps(x + i));
    for (int64_t h = 1; h < heads; ++h)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a[h]), _mm256_loadu_ps(x + h * stride + i), acc);
    _mm256_storeu_ps(y + i, acc);
    i += 8;
  }
  for (; i < n; ++i) {
    float sum = a[0] * x[i];
    for (int64_t h = 1; h < heads; ++h) sum += a[h] * x[h * stride + i];
    y[i] = sum;
  }
}

#include "cpu/pair_block_loops.inc"
}  // namespace avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

// Each loop on the AVX-512 helpers where the CPU has them (float), else as written.
#ifdef TRANSLUTION_PAIR_BLOCKS_AVX512
#define TRANSLUTION_PAIR_LOOP(loop)                              \
  template <typename T, typename... Args>                        \
  void loop##_on_cpu(Args... args) {                             \
    if constexpr (std::is_same_v<T, float>)                      \
      if (cpu_has_avx512()) return avx512::loop<float>(args...); \
    portable::loop<T>(args...);                                  \
  }
#else
#define TRANSLUTION_PAIR_LOOP(loop)       \
  template <typename T, typename... Args> \
  void loop##_on_cpu(Args... args) {      \
    portable::loop<T>(args...);           \
  }
#endif
TRANSLUTION_PAIR_LOOP(block_dots)
TRANSLUTION_PAIR_LOOP(block_dots_backward)
TRANSLUTION_PAIR_LOOP(block_weighted_sum)
TRANSLUTION_PAIR_LOOP(block_weighted_sum_backward)
TRANSLUTION_PAIR_LOOP(block_scatter_add)
#undef TRANSLUTION_PAIR_LOOP

int64_t rows_of(const PairTable& t, size_t e) { return (*t.offset)[e + 1] - (*t.offset)[e]; }
size_t matrices(const PairTable& t) { return t.offset->size() - 1; }

// Side s's rows of matrix e, [n B, D]: its kept rows where backward has them,
// else projected (relative) or gathered (plain) into `out`, through `gathered`
// (n B x C); `next` is the matrix this core takes next (its weights are streamed
// into cache meanwhile), or E.
template <typename T>
const T* side_block(const PairSide& s, const PairTable& t, size_t e, size_t next, T* gathered, T* out) {
  const int64_t o = (*t.offset)[e], n = rows_of(t, e), B = s.xt.size(1), C = s.xt.size(2);
  const T* x = s.xt.data_ptr<T>();
  if (!s.relative()) {
    gather_block(x, s.rows, o, o + n, B * C, out);
    return out;
  }
  const int64_t D = s.bank.size(2), E = int64_t(matrices(t));
  const T* w = s.bank.data_ptr<T>();
  const bool more = int64_t(next) < E;
  gather_block(x, s.rows, o, o + n, B * C, gathered);
  const Bf16Run run = bf16_run(t.engine);
  matrix_product<T>(n * B, C, D, gathered, w + int64_t(e) * C * D, out,
                    more ? w + int64_t(next) * C * D : nullptr, s.bf16 ? &run : nullptr,
                    s.w16 ? s.w16 + int64_t(e) * C * D : nullptr,
                    s.w16 && more ? s.w16 + int64_t(next) * C * D : nullptr);
  return out;
}

// Where side s's rows of matrix e go: its kept rows, or the scratch block.
template <typename T>
T* block_target(const PairSide& s, const PairTable& t, size_t e, T* scratch) {
  if (!s.saved.defined()) return scratch;
  return s.saved.data_ptr<T>() + (*t.offset)[e] * s.xt.size(1) * s.width();
}

// Given dS for side s's rows of matrix e ([n B, D]): the bank's matrix gradient,
// and the input rows' gradients added into dx ([T, B, C]).
template <typename T>
void side_block_backward(const PairSide& s, const PairTable& t, size_t e, const T* ds, T* gathered,
                         T* dgathered, T* dx, T* dbank) {
  const int64_t o = (*t.offset)[e], n = rows_of(t, e), B = s.xt.size(1), C = s.xt.size(2);
  if (!s.relative()) return block_scatter_add_on_cpu<T>(n, B * C, ds, s.rows + o, dx);
  const int64_t D = s.bank.size(2), w = int64_t(e) * C * D;
  gather_block(s.xt.data_ptr<T>(), s.rows, o, o + n, B * C, gathered);
  const Bf16Run run = bf16_run(t.engine);
  matrix_gradients<T>(n * B, C, D, gathered, ds, s.bank.data_ptr<T>() + w, dbank + w, dgathered,
                      s.bf16 ? &run : nullptr);
  block_scatter_add_on_cpu<T>(n, B * C, static_cast<const T*>(dgathered), s.rows + o, dx);
}

at::Tensor sum_parts(const at::Tensor& parts) { return parts.size(0) == 1 ? parts[0] : parts.sum(0); }

}  // namespace

PairTable pair_table(const EngineOptions& engine, const std::vector<int64_t>& offset,
                     const at::Tensor& pair_of_row, const at::Tensor& query_of_row,
                     const at::Tensor& source_of_row, int64_t queries, int64_t tokens) {
  PairTable t;
  t.engine = engine;
  t.offset = &offset;
  t.pair = pair_of_row.data_ptr<int64_t>();
  t.query = query_of_row.data_ptr<int64_t>();
  t.source = source_of_row.data_ptr<int64_t>();
  t.queries = queries;
  t.tokens = tokens;
  return t;
}

PairSide make_pair_side(const at::Tensor& xt, const at::Tensor& bank, const at::Tensor& rows, bool bf16,
                        const Bf16Bits* w16, const at::Tensor& saved) {
  PairSide s;
  s.xt = xt;
  s.bank = bank;
  s.rows = rows.data_ptr<int64_t>();
  s.bf16 = bf16;
  s.w16 = w16;
  s.saved = saved;
  return s;
}

int block_parts(const PairTable& t, std::initializer_list<const PairSide*> sides) {
  bool bf16 = false;
  int64_t most = 0;
  for (const PairSide* s : sides) {
    bf16 = bf16 || s->bf16;
    most = std::max(most, s->xt.size(2) * s->width());
  }
  return bf16 ? bf16_run(t.engine).parts
              : matrix_parts(t.engine, most_rows(*t.offset) * sides.begin()[0]->xt.size(1), 1, most);
}

// A [B, H, M, N] grid as pair-ordered planes [B H, R] (value of row r at [bh, r]),
// and back (0 at pairs without a row). Each plane is 10 KB for a 7 x 7 grid: the
// scattered side of the copy stays in L1, where the blocks' loops would read and
// write the grid a value per cache line.
at::Tensor grid_to_planes(const PairTable& t, const at::Tensor& grid_in) {
  const at::Tensor grid = grid_in.contiguous();
  const int64_t BH = grid.size(0) * grid.size(1), MN = t.queries * t.tokens, R = t.offset->back();
  at::Tensor planes = at::empty({BH, R}, grid.options());
  AT_DISPATCH_FLOATING_TYPES(grid.scalar_type(), "grid_to_planes", [&] {
    const scalar_t* g = grid.data_ptr<scalar_t>();
    scalar_t* p = planes.data_ptr<scalar_t>();
    run_chunks(BH, 4, element_parts(t.engine), [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh)
        for (int64_t r = 0; r < R; ++r) p[bh * R + r] = g[bh * MN + t.pair[r]];
    });
  });
  return planes;
}

at::Tensor planes_to_grid(const PairTable& t, const at::Tensor& planes, int64_t B, int64_t H) {
  const int64_t M = t.queries, N = t.tokens, R = t.offset->back();
  at::Tensor grid =
      R == M * N ? at::empty({B, H, M, N}, planes.options()) : at::zeros({B, H, M, N}, planes.options());
  AT_DISPATCH_FLOATING_TYPES(planes.scalar_type(), "planes_to_grid", [&] {
    const scalar_t* p = planes.data_ptr<scalar_t>();
    scalar_t* g = grid.data_ptr<scalar_t>();
    run_chunks(B * H, 4, element_parts(t.engine), [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh)
        for (int64_t r = 0; r < R; ++r) g[bh * M * N + t.pair[r]] = p[bh * R + r];
    });
  });
  return grid;
}

bool pair_blocks_apply(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors) {
  // The other algorithms are formulations of their own in LibTorch's ops (cpu/projection_algorithms.h).
  if (engine.reference || engine.projection == ProjectionAlgorithm::AllTokens ||
      engine.projection == ProjectionAlgorithm::OffsetBatched)
    return false;
  const at::ScalarType type = (*tensors.begin())->scalar_type();
  for (const at::Tensor* t : tensors) {
    if (!t->defined() || t->numel() == 0) continue;  // a plain side's empty bank
    if (!blas_gemm_usable(*t) || t->scalar_type() != type) return false;
  }
  return true;
}

at::Tensor blocked_logits(const PairTable& t, PairSide& q, PairSide& k, int64_t H, bool keep) {
  report_kernel(Kernel::PairBlocks);
  if (q.width() != k.width() || q.width() % H != 0)
    throw Error("internal: relative logits of " + std::to_string(q.width()) + "- and " +
                std::to_string(k.width()) + "-wide rows over " + std::to_string(H) + " heads");
  if (pair_lanes_apply(t, H, {&q, &k})) return lanes_logits(t, q, k, H);
  const int64_t B = q.xt.size(1), D = q.width(), R = t.offset->back(), w = D / H;
  for (PairSide* s : {&q, &k})
    s->saved = keep && s->relative() ? at::empty({R, B, D}, s->xt.options()) : at::Tensor();
  at::Tensor planes = at::empty({B * H, R}, q.xt.options());
  const int64_t block = most_rows(*t.offset) * B, C = std::max(q.xt.size(2), k.xt.size(2));
  const int parts = block_parts(t, {&q, &k});
  const Scratch scratch(parts, block * (C + 2 * D + H), q.xt.element_size());
  AT_DISPATCH_FLOATING_TYPES(q.xt.scalar_type(), "blocked_logits", [&] {
    scalar_t* dots = planes.data_ptr<scalar_t>();
    // Matrices claimed four at a time as each core comes free: each writes its own pairs.
    for_each_claimed(matrices(t), parts, 4, [&](size_t e, size_t next, int part) {
      const int64_t n = rows_of(t, e), o = (*t.offset)[e];
      if (n == 0) return;
      scalar_t* gathered = scratch.part<scalar_t>(part);
      scalar_t *qs = gathered + block * C, *ks = qs + block * D;
      const scalar_t* Q = side_block(q, t, e, next, gathered, block_target(q, t, e, qs));
      const scalar_t* K = side_block(k, t, e, next, gathered, block_target(k, t, e, ks));
      block_dots_on_cpu<scalar_t>(n, B, H, w, Q, K, R, dots + o, ks + block * D);
    });
  });
  return planes_to_grid(t, planes, B, H);
}

std::array<at::Tensor, 4> blocked_logits_backward(const PairTable& t, const PairSide& q, const PairSide& k,
                                                  const at::Tensor& grad_in) {
  report_kernel(Kernel::PairBlocks);
  if (pair_lanes_backward(t, grad_in.size(1), {&q, &k})) return lanes_logits_backward(t, q, k, grad_in);
  const int64_t B = q.xt.size(1), D = q.width(), H = grad_in.size(1), R = t.offset->back(), w = D / H;
  const at::Tensor grad = grid_to_planes(t, grad_in);
  const int64_t block = most_rows(*t.offset) * B, C = std::max(q.xt.size(2), k.xt.size(2));
  const int parts = block_parts(t, {&q, &k});
  at::Tensor dq = at::zeros({parts, q.xt.size(0), B, q.xt.size(2)}, q.xt.options());
  at::Tensor dk = at::zeros({parts, k.xt.size(0), B, k.xt.size(2)}, k.xt.options());
  at::Tensor dq_bank = q.relative() ? bank_gradient_buffer(q.bank, *t.offset) : at::Tensor();
  at::Tensor dk_bank = k.relative() ? bank_gradient_buffer(k.bank, *t.offset) : at::Tensor();
  const Scratch scratch(parts, block * (2 * C + 4 * D + H), q.xt.element_size());
  AT_DISPATCH_FLOATING_TYPES(q.xt.scalar_type(), "blocked_logits_backward", [&] {
    const scalar_t* gp = grad.data_ptr<scalar_t>();
    scalar_t* dqb = dq_bank.defined() ? dq_bank.data_ptr<scalar_t>() : nullptr;
    scalar_t* dkb = dk_bank.defined() ? dk_bank.data_ptr<scalar_t>() : nullptr;
    // Fixed ranges of matrices: each part adds into its own input gradients.
    for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
      scalar_t* gathered = scratch.part<scalar_t>(part);
      scalar_t *dgathered = gathered + block * C, *qs = dgathered + block * C, *ks = qs + block * D;
      scalar_t *dqs = ks + block * D, *dks = dqs + block * D;
      scalar_t* dqx = dq.data_ptr<scalar_t>() + part * dq.stride(0);
      scalar_t* dkx = dk.data_ptr<scalar_t>() + part * dk.stride(0);
      for (size_t e = first; e < last; ++e) {
        const int64_t n = rows_of(t, e), o = (*t.offset)[e];
        if (n == 0) continue;
        const size_t next =
            e + 1 < last ? e + 1 : matrices(t);  // this part's next matrix, streamed meanwhile
        const scalar_t* Q =
            q.saved.defined() ? block_target(q, t, e, qs) : side_block(q, t, e, next, gathered, qs);
        const scalar_t* K =
            k.saved.defined() ? block_target(k, t, e, ks) : side_block(k, t, e, next, gathered, ks);
        block_dots_backward_on_cpu<scalar_t>(n, B, H, w, Q, K, R, gp + o, dqs, dks, dks + block * D);
        side_block_backward(q, t, e, dqs, gathered, dgathered, dqx, dqb);
        side_block_backward(k, t, e, dks, gathered, dgathered, dkx, dkb);
      }
    });
  });
  return {sum_parts(dq), dq_bank, sum_parts(dk), dk_bank};
}

at::Tensor blocked_values(const PairTable& t, const at::Tensor& alpha_in, PairSide& v, bool head_sliced,
                          bool keep, at::Tensor* alpha_planes) {
  report_kernel(Kernel::PairBlocks);
  if (pair_lanes_apply(t, alpha_in.size(1), {&v}))
    return lanes_values(t, alpha_in, v, head_sliced, alpha_planes);
  const int64_t B = alpha_in.size(0), H = alpha_in.size(1), M = t.queries, D = v.width(),
                R = t.offset->back();
  const at::Tensor alpha = grid_to_planes(t, alpha_in);
  if (alpha_planes) *alpha_planes = alpha;
  const int64_t w = head_sliced ? D / H : D;
  v.saved = keep ? at::empty({R, B, D}, v.xt.options()) : at::Tensor();
  const int64_t block = most_rows(*t.offset) * B, C = v.xt.size(2);
  const int parts = block_parts(t, {&v});
  // Rows of different matrices add into the same query: each part into its own output.
  at::Tensor out = at::zeros({parts, M, B, H, w}, v.xt.options());
  const Scratch scratch(parts, block * (C + D + H), v.xt.element_size());
  AT_DISPATCH_FLOATING_TYPES(v.xt.scalar_type(), "blocked_values", [&] {
    const scalar_t* ap = alpha.data_ptr<scalar_t>();
    for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
      scalar_t* gathered = scratch.part<scalar_t>(part);
      scalar_t* out_part = out.data_ptr<scalar_t>() + part * out.stride(0);
      for (size_t e = first; e < last; ++e) {
        const int64_t n = rows_of(t, e), o = (*t.offset)[e];
        if (n == 0) continue;
        const scalar_t* V = side_block(v, t, e, e + 1 < last ? e + 1 : matrices(t), gathered,
                                       block_target(v, t, e, gathered + block * C));
        block_weighted_sum_on_cpu<scalar_t>(n, B, H, w, head_sliced, V, t.query + o, R, ap + o, out_part,
                                            gathered + block * (C + D));
      }
    });
  });
  return sum_parts(out);
}

std::array<at::Tensor, 3> blocked_values_backward(const PairTable& t, const at::Tensor& alpha,
                                                  const PairSide& v, const at::Tensor& dout_in,
                                                  bool head_sliced) {
  report_kernel(Kernel::PairBlocks);
  if (pair_lanes_backward(t, dout_in.size(2), {&v}))
    return lanes_values_backward(t, alpha, v, dout_in, head_sliced);
  const at::Tensor dout = dout_in.contiguous();  // [M, B, H, w]; alpha: [B H, R]
  const int64_t B = dout.size(1), H = dout.size(2), R = t.offset->back(), D = v.width();
  const int64_t w = head_sliced ? D / H : D;
  const int64_t block = most_rows(*t.offset) * B, C = v.xt.size(2);
  const int parts = block_parts(t, {&v});
  at::Tensor dalpha = at::empty({B * H, R}, alpha.options());
  at::Tensor dx = at::zeros({parts, v.xt.size(0), B, C}, v.xt.options());
  at::Tensor dbank = bank_gradient_buffer(v.bank, *t.offset);
  const Scratch scratch(parts, block * (2 * C + 2 * D + 2 * H), v.xt.element_size());
  AT_DISPATCH_FLOATING_TYPES(v.xt.scalar_type(), "blocked_values_backward", [&] {
    const scalar_t *ap = alpha.data_ptr<scalar_t>(), *gp = dout.data_ptr<scalar_t>();
    scalar_t *dap = dalpha.data_ptr<scalar_t>(), *dbp = dbank.data_ptr<scalar_t>();
    for_matrix_parts(*t.offset, parts, [&](size_t first, size_t last, int part) {
      scalar_t* gathered = scratch.part<scalar_t>(part);
      scalar_t *dgathered = gathered + block * C, *vs = dgathered + block * C, *dvs = vs + block * D;
      scalar_t* dx_part = dx.data_ptr<scalar_t>() + part * dx.stride(0);
      for (size_t e = first; e < last; ++e) {
        const int64_t n = rows_of(t, e), o = (*t.offset)[e];
        if (n == 0) continue;
        const size_t next = e + 1 < last ? e + 1 : matrices(t);
        const scalar_t* V =
            v.saved.defined() ? block_target(v, t, e, vs) : side_block(v, t, e, next, gathered, vs);
        block_weighted_sum_backward_on_cpu<scalar_t>(n, B, H, w, head_sliced, V, t.query + o, R, ap + o, gp,
                                                     dap + o, dvs, dvs + block * D);
        side_block_backward(v, t, e, dvs, gathered, dgathered, dx_part, dbp);
      }
    });
  });
  return {planes_to_grid(t, dalpha, B, H), sum_parts(dx), dbank};
}

}  // namespace translution
