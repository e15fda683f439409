// A prototype, for planning: LoR-Translution's relative logits (q_ij . k_ji per
// head, 24 x 24 offset matrices, 3 heads of 8) at one core's share of a split
// training step (16 images, 7 x 7 patches + CLS), with the batch across the
// vector lanes: the inputs transposed to [token, channel, image], so a pair's 16
// images are one 512-bit vector, a matrix's entries are broadcast from L1, every
// lane does useful work (the row kernels' 32-column blocks waste 8 of 32 on these
// 24-wide rows) and the per-head dot products are vertical sums (no horizontal
// reductions). Forward (keeping q_ij and k_ji for backward, writing the logits'
// [B, H, N, N] grid) and backward (from the grid's gradient: both inputs' and both
// banks' gradients), checked against a per-pair double-precision loop, timed
// alone. The values (alpha-weighted sums) are not prototyped. Compare with the engine's path at the same shape (bench/pair_blocks.cpp,
// "logits forward" and "logits backward"). docs/benchmarks.md ("Session 19").
// Not part of the build:
//   g++ -O3 -march=native bench/lanes_logits.cpp -o /tmp/lanes_logits && taskset -c 0 /tmp/lanes_logits
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int B = 16, G = 7, N = G * G + 1, C = 24, D = 24, H = 3, W = D / H;
constexpr int kSide = 2 * G - 1, E = kSide * kSide + 3;  // offsets, then CLS->CLS, token->CLS, CLS->token

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Offset matrix of pair (i, j), token 0 the CLS token (Appendix H's three entries).
int entry(int i, int j) {
  if (i == 0 && j == 0) return E - 3;
  if (j == 0) return E - 2;
  if (i == 0) return E - 1;
  const int dy = (j - 1) / G - (i - 1) / G, dx = (j - 1) % G - (i - 1) % G;
  return (dy + G - 1) * kSide + (dx + G - 1);
}

struct Pair {
  int i, j, eq, ek;  // k_ji uses the matrix of offset j - i seen from j: entry(j, i)
};

// acc[d] = sum_c w[c][d] x[c] for 16 lanes: 24 accumulators, w broadcast from memory.
inline void project(const float* w, const float* xT, __m512 acc[D]) {
  for (int d = 0; d < D; ++d) acc[d] = _mm512_setzero_ps();
  for (int c = 0; c < C; ++c) {
    const __m512 x = _mm512_load_ps(xT + c * B);
#pragma GCC unroll 24
    for (int d = 0; d < D; ++d) acc[d] = _mm512_fmadd_ps(_mm512_set1_ps(w[c * D + d]), x, acc[d]);
  }
}

// Forward: keeps q_ij and k_ji ([R, D, 16]) and writes the logits per pair and head ([R, H, 16]).
void forward(const std::vector<Pair>& pairs, const float* xqT, const float* xkT, const float* wq, const float* wk,
             float* qs, float* ks, float* logits) {
  for (size_t r = 0; r < pairs.size(); ++r) {
    const Pair& p = pairs[r];
    __m512 acc[D];
    project(wq + p.eq * C * D, xqT + p.i * C * B, acc);
    for (int d = 0; d < D; ++d) _mm512_store_ps(qs + (r * D + d) * B, acc[d]);
    project(wk + p.ek * C * D, xkT + p.j * C * B, acc);
    for (int d = 0; d < D; ++d) _mm512_store_ps(ks + (r * D + d) * B, acc[d]);
    for (int h = 0; h < H; ++h) {
      __m512 s = _mm512_setzero_ps();
      for (int d = h * W; d < (h + 1) * W; ++d) s = _mm512_fmadd_ps(_mm512_load_ps(qs + (r * D + d) * B), acc[d], s);
      _mm512_store_ps(logits + (r * H + h) * B, s);
    }
  }
}

// One side's backward for the pairs rows[0, n) of one matrix w: ds[d] = g_h(d) * other[d];
// dx[token] += w ds (over d), dw += x ds^T (over the pairs and lanes).
void side_backward(const std::vector<Pair>& pairs, const size_t* rows, size_t n, bool query, const float* xT,
                   const float* w, const float* other, const float* grad, float* dxT, float* dw, float* ds_scratch) {
  assert(n <= 64);  // the scratch's pairs per matrix (49 at most on a 7 x 7 grid with CLS)
  for (size_t k = 0; k < n; ++k) {
    const size_t r = rows[k];
    const Pair& p = pairs[r];
    float* ds = ds_scratch + k * D * B;
    for (int d = 0; d < D; ++d)
      _mm512_store_ps(ds + d * B, _mm512_mul_ps(_mm512_load_ps(grad + (r * H + d / W) * B),
                                               _mm512_load_ps(other + (r * D + d) * B)));
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int d = 0; d < D; ++d) {
      const __m512 g = _mm512_load_ps(ds + d * B);
#pragma GCC unroll 24
      for (int c = 0; c < C; ++c) acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(w[c * D + d]), g, acc[c]);
    }
    float* dx = dxT + (query ? p.i : p.j) * C * B;
    for (int c = 0; c < C; ++c) _mm512_store_ps(dx + c * B, _mm512_add_ps(_mm512_load_ps(dx + c * B), acc[c]));
  }
  // dw[c][d] = sum over the block's pairs and lanes of x[c] ds[d]: 4 x 6 register blocks.
  for (int c0 = 0; c0 < C; c0 += 4)
    for (int d0 = 0; d0 < D; d0 += 6) {
      __m512 acc[4][6];
      for (auto& row : acc)
        for (auto& a : row) a = _mm512_setzero_ps();
      for (size_t k = 0; k < n; ++k) {
        const float* x = xT + (query ? pairs[rows[k]].i : pairs[rows[k]].j) * C * B;
        const float* ds = ds_scratch + k * D * B;
        __m512 xs[4];
        for (int c = 0; c < 4; ++c) xs[c] = _mm512_load_ps(x + (c0 + c) * B);
        for (int d = 0; d < 6; ++d) {
          const __m512 g = _mm512_load_ps(ds + (d0 + d) * B);
          for (int c = 0; c < 4; ++c) acc[c][d] = _mm512_fmadd_ps(xs[c], g, acc[c][d]);
        }
      }
      for (int c = 0; c < 4; ++c)
        for (int d = 0; d < 6; ++d) dw[(c0 + c) * D + d0 + d] += _mm512_reduce_add_ps(acc[c][d]);
    }
}

// Per-pair logits [R, H, 16] <-> the [B, H, N, N] grid the softmax reads (the engine's
// planes_to_grid and grid_to_planes do the same work).
void to_grid(const std::vector<Pair>& pairs, const float* per_pair, float* grid) {
  for (size_t r = 0; r < pairs.size(); ++r)
    for (int h = 0; h < H; ++h)
      for (int b = 0; b < B; ++b) grid[((b * H + h) * N + pairs[r].i) * N + pairs[r].j] = per_pair[(r * H + h) * B + b];
}
void from_grid(const std::vector<Pair>& pairs, const float* grid, float* per_pair) {
  for (size_t r = 0; r < pairs.size(); ++r)
    for (int h = 0; h < H; ++h)
      for (int b = 0; b < B; ++b) per_pair[(r * H + h) * B + b] = grid[((b * H + h) * N + pairs[r].i) * N + pairs[r].j];
}

// [B, N, C] <-> [N, C, B]
void to_lanes(const float* x, float* xT) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < N; ++t)
      for (int c = 0; c < C; ++c) xT[(t * C + c) * B + b] = x[(b * N + t) * C + c];
}
void from_lanes(const float* xT, float* x) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < N; ++t)
      for (int c = 0; c < C; ++c) x[(b * N + t) * C + c] = xT[(t * C + c) * B + b];
}

float* lanes_alloc(size_t floats) { return static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64)); }

}  // namespace

int main() {
  std::vector<Pair> pairs;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) pairs.push_back({i, j, entry(i, j), entry(j, i)});
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.eq < b.eq; });
  const size_t R = pairs.size();
  // Each side's pairs grouped by its matrix: q's are in order; k's through an index.
  std::vector<size_t> by_q(R), by_k(R), first_q(E + 1, 0), first_k(E + 1, 0);
  for (size_t r = 0; r < R; ++r) by_q[r] = by_k[r] = r;
  std::stable_sort(by_k.begin(), by_k.end(), [&](size_t a, size_t b) { return pairs[a].ek < pairs[b].ek; });
  for (const Pair& p : pairs) ++first_q[size_t(p.eq) + 1], ++first_k[size_t(p.ek) + 1];
  for (int e = 0; e < E; ++e) first_q[size_t(e) + 1] += first_q[size_t(e)], first_k[size_t(e) + 1] += first_k[size_t(e)];

  std::srand(1);
  auto random = [](std::vector<float>& v) {
    for (float& x : v) x = float(std::rand() % 2001) / 1000.0f - 1.0f;
  };
  std::vector<float> xq(B * N * C), xk(B * N * C), wq(E * C * D), wk(E * C * D), grad(R * H * B);
  random(xq), random(xk), random(wq), random(wk), random(grad);
  float *xqT = lanes_alloc(N * C * B), *xkT = lanes_alloc(N * C * B), *qs = lanes_alloc(R * D * B),
        *ks = lanes_alloc(R * D * B), *logits = lanes_alloc(R * H * B), *g = lanes_alloc(R * H * B),
        *dxqT = lanes_alloc(N * C * B), *dxkT = lanes_alloc(N * C * B), *scratch = lanes_alloc(64 * D * B);
  std::vector<float> dwq(E * C * D), dwk(E * C * D), dxq(B * N * C), dxk(B * N * C), grid(B * H * N * N),
      grad_grid(B * H * N * N);
  to_grid(pairs, grad.data(), grad_grid.data());  // the logits' gradient arrives as a grid

  auto run_forward = [&] {
    to_lanes(xq.data(), xqT);
    to_lanes(xk.data(), xkT);
    forward(pairs, xqT, xkT, wq.data(), wk.data(), qs, ks, logits);
    to_grid(pairs, logits, grid.data());
  };
  auto run_backward = [&] {
    from_grid(pairs, grad_grid.data(), g);
    std::fill(dxqT, dxqT + N * C * B, 0.0f);
    std::fill(dxkT, dxkT + N * C * B, 0.0f);
    std::fill(dwq.begin(), dwq.end(), 0.0f);
    std::fill(dwk.begin(), dwk.end(), 0.0f);
    for (int e = 0; e < E; ++e) {
      const size_t q0 = first_q[size_t(e)], q1 = first_q[size_t(e) + 1], k0 = first_k[size_t(e)],
                   k1 = first_k[size_t(e) + 1];
      side_backward(pairs, by_q.data() + q0, q1 - q0, true, xqT, wq.data() + e * C * D, ks, g, dxqT,
                    dwq.data() + e * C * D, scratch);
      side_backward(pairs, by_k.data() + k0, k1 - k0, false, xkT, wk.data() + e * C * D, qs, g, dxkT,
                    dwk.data() + e * C * D, scratch);
    }
    from_lanes(dxqT, dxq.data());
    from_lanes(dxkT, dxk.data());
  };

  // Check against the equations, per pair, in double.
  run_forward();
  run_backward();
  double worst_logit = 0;
  std::vector<double> rdxq(B * N * C, 0.0), rdxk(B * N * C, 0.0), rdwq(E * C * D, 0.0), rdwk(E * C * D, 0.0);
  for (size_t r = 0; r < R; ++r) {
    const Pair& p = pairs[r];
    for (int b = 0; b < B; ++b) {
      double q[D], k[D];
      for (int d = 0; d < D; ++d) {
        q[d] = k[d] = 0;
        for (int c = 0; c < C; ++c) {
          q[d] += double(xq[(b * N + p.i) * C + c]) * wq[(p.eq * C + c) * D + d];
          k[d] += double(xk[(b * N + p.j) * C + c]) * wk[(p.ek * C + c) * D + d];
        }
      }
      for (int h = 0; h < H; ++h) {
        double s = 0;
        for (int d = h * W; d < (h + 1) * W; ++d) s += q[d] * k[d];
        const double fast = grid[((b * H + h) * N + p.i) * N + p.j];
        worst_logit = std::max(worst_logit, std::fabs(s - fast) / (1 + std::fabs(s)));
        const double gh = grad[(r * H + h) * B + b];
        for (int d = h * W; d < (h + 1) * W; ++d)
          for (int c = 0; c < C; ++c) {
            rdxq[(b * N + p.i) * C + c] += gh * k[d] * wq[(p.eq * C + c) * D + d];
            rdxk[(b * N + p.j) * C + c] += gh * q[d] * wk[(p.ek * C + c) * D + d];
            rdwq[(p.eq * C + c) * D + d] += gh * k[d] * xq[(b * N + p.i) * C + c];
            rdwk[(p.ek * C + c) * D + d] += gh * q[d] * xk[(b * N + p.j) * C + c];
          }
      }
    }
  }
  auto worst = [](const std::vector<double>& want, const std::vector<float>& got) {
    double w = 0;
    for (size_t i = 0; i < want.size(); ++i) w = std::max(w, std::fabs(want[i] - got[i]) / (1 + std::fabs(want[i])));
    return w;
  };
  std::printf("against a double per-pair loop (relative): logits %.1e, dL/dxq %.1e, dL/dxk %.1e, dL/dwq %.1e, "
              "dL/dwk %.1e\n",
              worst_logit, worst(rdxq, dxq), worst(rdxk, dxk), worst(rdwq, dwq), worst(rdwk, dwk));

  std::vector<double> tf, tb;
  for (int round = 0; round < 60; ++round) {
    double t = now();
    run_forward();
    tf.push_back(now() - t);
    t = now();
    run_backward();
    tb.push_back(now() - t);
  }
  std::sort(tf.begin(), tf.end());
  std::sort(tb.begin(), tb.end());
  const double macs = double(R) * B * C * D;  // one side's projection
  std::printf("batch %d, %zu pairs: forward %.3f ms (best %.3f), backward %.3f ms (best %.3f); "
              "projection work %.1f GFLOP/s forward, %.1f backward (medians)\n",
              B, R, tf[tf.size() / 2] * 1e3, tf.front() * 1e3, tb[tb.size() / 2] * 1e3, tb.front() * 1e3,
              2 * 2 * macs / tf[tf.size() / 2] / 1e9, 2 * 4 * macs / tb[tb.size() / 2] / 1e9);
  return 0;
}
