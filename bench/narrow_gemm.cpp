// LoR-Translution's per-matrix products at batch 32 (ViT-A/12, 84x84): 172
// matrices of 24 x 24, each multiplying its 464 gathered rows, in the three
// shapes a training step runs them: forward S = G W, and backward dG = dS W^T and
// dW = G^T dS. Each through OpenBLAS and through the engine's row kernel
// (core/nn/row_gemm.cpp; dG on a transposed copy of W made per matrix and timed
// with the product, dW by row_gemm_at, which reads G as it lies), rounds alternating between the
// two so that a slow stretch of this shared machine falls on both. Prints the
// median time per product of each over the rounds. docs/benchmarks.md ("Session
// 14") quotes it. Not part of the build:
//   g++ -O3 -Icore bench/narrow_gemm.cpp core/nn/row_gemm.cpp -o /tmp/narrow_gemm
//       /usr/lib/x86_64-linux-gnu/libblas.so.3 -lpthread   (one line)
//   env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 /tmp/narrow_gemm
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "standalone_kernels.h"

namespace {

constexpr int kRows = 464, kWidth = 24, kEntries = 172, kRounds = 9, kRepeats = 10;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Row-major c[m x n] = op(a) op(b) through the Fortran interface (which is column-major: swap the operands).
void blas(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c) {
  const float one = 1, zero = 0;
  sgemm_(tb ? "T" : "N", ta ? "T" : "N", &n, &m, &k, &one, b, &ldb, a, &lda, &zero, c, &n);
}

struct Data {
  std::vector<float> g, ds, w, out, dw;
  Data()
      : g(size_t(kEntries) * kRows * kWidth), ds(g.size()), w(size_t(kEntries) * kWidth * kWidth), out(g.size()),
        dw(w.size()) {
    for (auto* v : {&g, &ds, &w})
      for (float& x : *v) x = float(std::rand() % 1000) / 1000.f - 0.5f;
  }
};

// One pass over every matrix in the given shape (0: S = G W, 1: dG = dS W^T, 2: dW = G^T dS).
void pass(Data& d, int shape, bool engine) {
  const int m = kRows, c = kWidth;
  thread_local std::vector<float> t(size_t(kRows) * kWidth);
  for (int e = 0; e < kEntries; ++e) {
    const float *g = d.g.data() + size_t(e) * m * c, *ds = d.ds.data() + size_t(e) * m * c,
                *w = d.w.data() + size_t(e) * c * c;
    float *out = d.out.data() + size_t(e) * m * c, *dw = d.dw.data() + size_t(e) * c * c;
    if (!engine) {
      if (shape == 0) blas(false, false, m, c, c, g, c, w, c, out);
      if (shape == 1) blas(false, true, m, c, c, ds, c, w, c, out);
      if (shape == 2) blas(true, false, c, c, m, g, c, ds, c, dw);
      continue;
    }
    if (shape == 0) translution::row_gemm(m, c, c, g, c, w, c, out, c);
    if (shape == 1) {
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < c; ++j) t[size_t(j * c + i)] = w[i * c + j];
      translution::row_gemm(m, c, c, ds, c, t.data(), c, out, c);
    }
    if (shape == 2) translution::row_gemm_at(c, c, m, g, c, ds, c, dw, c);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  Data d;
  const char* names[3] = {"S = G W", "dG = dS W^T", "dW = G^T dS"};
  const double flops = 2.0 * kRows * kWidth * kWidth;
  for (int shape = 0; shape < 3; ++shape) {
    // Same results from both (up to the order of the float sums).
    pass(d, shape, false);
    std::vector<float> reference = shape == 2 ? d.dw : d.out;
    pass(d, shape, true);
    const std::vector<float>& mine = shape == 2 ? d.dw : d.out;
    double worst = 0;
    for (size_t i = 0; i < mine.size(); ++i) worst = std::max(worst, double(std::fabs(mine[i] - reference[i])));
    std::vector<double> each[2];
    for (int round = 0; round < kRounds; ++round)
      for (int engine = 0; engine < 2; ++engine) {
        const double start = now();
        for (int repeat = 0; repeat < kRepeats; ++repeat) pass(d, shape, engine == 1);
        each[engine].push_back((now() - start) / (kRepeats * kEntries));
      }
    const double blas_us = median(each[0]) * 1e6, engine_us = median(each[1]) * 1e6;
    std::printf("%-12s 464 x 24 x 24: OpenBLAS %5.2f us (%5.1f GFLOP/s), row kernel %5.2f us (%5.1f GFLOP/s), "
                "ratio %.2f, largest difference %.1e\n",
                names[shape], blas_us, flops / blas_us / 1e3, engine_us, flops / engine_us / 1e3,
                engine_us / blas_us, worst);
  }
  return 0;
}
