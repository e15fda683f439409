// How close the BLAS runs a training step's dense products to the silicon: the
// products of one core's half of a ViT-A/12 batch of 32 (800 token rows) for
// each dense layer of a block (forward X W^T, input gradient dY W, weight
// gradient dY^T X), on one thread through OpenBLAS and through a plain AVX-512
// kernel of this file (8 x 48 register blocks over b packed into 48-column
// panels, packing timed with it), alternating, against one core's fp32 FMA peak
// (core/util/fma_peak.cpp; session 13's bench/dot_rate.cpp measures it too).
// docs/benchmarks.md ("Session 19") quotes it. Not part of the build:
//   g++ -O3 -Icore bench/dense_shapes.cpp core/util/fma_peak.cpp -o /tmp/dense_shapes
//       /usr/lib/x86_64-linux-gnu/libblas.so.3 -lpthread   (one line)
//   env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 /tmp/dense_shapes [rounds=40]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "util/fma_peak.h"

extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Row-major c[m x n] = op(a) op(b) through the column-major interface.
void blas(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c) {
  const float one = 1, zero = 0;
  sgemm_(tb ? "T" : "N", ta ? "T" : "N", &n, &m, &k, &one, b, &ldb, a, &lda, &zero, c, &n);
}

constexpr int kRows = 8, kPanel = 48;  // 24 accumulators, 3 loads of b and 8 broadcasts of a per step

// a's element (i, p) sits at a[i * ai + p * ap]: row-major, or transposed without a copy.
__attribute__((target("avx512f"))) void block(int k, const float* a, long ai, long ap, const float* panel, float* c,
                                              int ldc) {
  __m512 acc[kRows][3];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (int p = 0; p < k; ++p) {
    const __m512 b0 = _mm512_load_ps(panel + p * kPanel), b1 = _mm512_load_ps(panel + p * kPanel + 16),
                 b2 = _mm512_load_ps(panel + p * kPanel + 32);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * ai + p * ap]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < 3; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

// The same product with b packed first (b's element (p, j) at b[p * bp + j * bj]);
// m a multiple of 8 and n of 48, as every shape below is.
void packed(int m, int n, int k, const float* a, long ai, long ap, const float* b, long bp, long bj, float* c,
            float* panels) {
  for (int j0 = 0; j0 < n; j0 += kPanel)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < kPanel; ++j) panels[long(j0) * k + long(p) * kPanel + j] = b[p * bp + (j0 + j) * bj];
  for (int j0 = 0; j0 < n; j0 += kPanel)
    for (int i = 0; i < m; i += kRows) block(k, a + i * ai, ai, ap, panels + long(j0) * k, c + long(i) * n + j0, n);
}

struct Shape {
  const char* name;
  int m, n, k;
  bool ta, tb;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  const translution::FmaPeak peak = translution::measure_fma_peak(1, 0.05);
  std::printf("one core's fp32 FMA peak (%s): %.1f GFLOP/s\n", peak.isa.c_str(), peak.gflops);
  const int rows = 800;  // 16 images x 50 tokens
  const struct { const char* layer; int in, out; } layers[] = {{"qkv", 192, 576}, {"proj", 192, 192},
                                                               {"fc1", 192, 768}, {"fc2", 768, 192}};
  std::vector<float> x(rows * 768), w(768 * 768), dy(rows * 768), c1(rows * 768), c2(c1.size());
  float* panels = static_cast<float*>(std::aligned_alloc(64, 768 * 800 * sizeof(float)));
  for (auto* v : {&x, &w, &dy})
    for (float& e : *v) e = float(std::rand() % 1000) / 1000.0f - 0.5f;
  std::printf("%-5s %-14s %-15s %12s %12s %8s\n", "layer", "product", "m x n x k", "OpenBLAS", "8x48 kernel",
              "max diff");
  for (const auto& l : layers) {
    const Shape shapes[] = {{"X W^T", rows, l.out, l.in, false, true},
                            {"dY W", rows, l.in, l.out, false, false},
                            {"dY^T X", l.out, l.in, rows, true, false}};
    for (const Shape& s : shapes) {
      // operands: forward a = X [rows, in], b = W^T (W [out, in]); dX a = dY [rows, out], b = W;
      // dW a = dY^T (dY [rows, out]), b = X.
      const bool forward = !s.ta && s.tb, input_grad = !s.ta && !s.tb;
      const float* a = forward ? x.data() : dy.data();
      const int lda = forward ? l.in : l.out;
      const float* b = s.ta ? x.data() : w.data();
      const int ldb = l.in;  // W [out, in] and X [rows, in] alike
      std::vector<double> t_blas, t_kernel;
      for (int r = 0; r < rounds; ++r) {
        double t = now();
        blas(s.ta, s.tb, s.m, s.n, s.k, a, lda, b, ldb, c1.data());
        t_blas.push_back(now() - t);
        t = now();
        if (forward) packed(s.m, s.n, s.k, a, lda, 1, b, 1, ldb, c2.data(), panels);
        else if (input_grad) packed(s.m, s.n, s.k, a, lda, 1, b, ldb, 1, c2.data(), panels);
        else packed(s.m, s.n, s.k, a, 1, lda, b, ldb, 1, c2.data(), panels);
        t_kernel.push_back(now() - t);
      }
      double diff = 0;
      for (long i = 0; i < long(s.m) * s.n; ++i) diff = std::max(diff, double(std::fabs(c1[i] - c2[i])));
      std::sort(t_blas.begin(), t_blas.end());
      std::sort(t_kernel.begin(), t_kernel.end());
      const double flops = 2.0 * s.m * s.n * s.k;
      char dims[32];
      std::snprintf(dims, sizeof dims, "%dx%dx%d", s.m, s.n, s.k);
      std::printf("%-5s %-14s %-15s %5.1f / %5.1f %5.1f / %5.1f %8.1e   GFLOP/s best / median\n", l.layer, s.name,
                  dims, flops / t_blas.front() / 1e9, flops / t_blas[t_blas.size() / 2] / 1e9,
                  flops / t_kernel.front() / 1e9, flops / t_kernel[t_kernel.size() / 2] / 1e9, diff);
    }
  }
  std::free(panels);
  return 0;
}
