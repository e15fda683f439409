// OpenBLAS's sgemm against oneDNN's (the two libraries Debian's LibTorch links),
// one thread per product, on the shapes of a split training step's dense layers
// (one core's half of a ViT-A/12 batch of 32: 16 images x 50 tokens = 800 rows)
// and on smaller ones (one head's logits, one image's rows, per-matrix products).
// It chose nn/raw_gemm's rule, oneDNN from 2^19 multiply-adds (docs/benchmarks.md,
// "Session 23"). Not part of the build:
//   g++ -O2 -fopenmp bench/sgemm_libraries.cpp -o /tmp/sgemm_libraries \
//       /usr/lib/x86_64-linux-gnu/libdnnl.so.2 /usr/lib/x86_64-linux-gnu/libopenblas.so.0 -lpthread
//   env -u OPENBLAS_CORETYPE /tmp/sgemm_libraries
// Part 1: each shape alone, hot in cache, best of 20 (GFLOP/s). Part 2: the
// step's twelve dense shapes on both cores at once, each core its own operands,
// rotating over six copies so that they come from L3 as in a step (GFLOP/s of
// both cores together), six alternating rounds of about a second each.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

extern "C" int dnnl_sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
extern "C" void openblas_set_num_threads(int);

namespace {

struct Shape {
  const char* name;
  bool ta, tb;  // row-major: c [m x n] = op(a) op(b)
  int64_t m, n, k;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// One core's half of the step: forward x w^T, input gradients dy w, weight gradients dy^T x.
const Shape kStep[] = {
    {"qkv forward", false, true, 800, 576, 192},  {"out forward", false, true, 800, 192, 192},
    {"fc1 forward", false, true, 800, 768, 192},  {"fc2 forward", false, true, 800, 192, 768},
    {"qkv dx", false, false, 800, 192, 576},      {"fc1 dx", false, false, 800, 192, 768},
    {"fc2 dx", false, false, 800, 768, 192},      {"out dx", false, false, 800, 192, 192},
    {"qkv dw", true, false, 576, 192, 800},       {"fc1 dw", true, false, 768, 192, 800},
    {"fc2 dw", true, false, 192, 768, 800},       {"out dw", true, false, 192, 192, 800},
};
const Shape kSmaller[] = {
    {"head logits", false, true, 50, 50, 64},       {"head values", false, false, 50, 64, 50},
    {"head dV", true, false, 50, 64, 50},           {"one row qkv", false, true, 1, 576, 192},
    {"image qkv", false, true, 50, 576, 192},       {"image fc1", false, true, 50, 768, 192},
    {"image fc2", false, true, 50, 192, 768},       {"matrix 15 rows", false, true, 15, 192, 192},
    {"matrix 15 rows nn", false, false, 15, 192, 192}, {"matrix 240 rows", false, false, 240, 192, 192},
    {"matrix dw", true, false, 192, 192, 240},      {"LoR 24 wide", false, true, 800, 24, 192},
    {"LoR 24 dw", true, false, 24, 192, 800},
};

struct Operands {
  std::vector<float> a, b, c;
};

Operands make(const Shape& s, std::mt19937& g) {
  std::uniform_real_distribution<float> u(-1, 1);
  Operands o{std::vector<float>(s.m * s.k), std::vector<float>(s.k * s.n), std::vector<float>(s.m * s.n)};
  for (float& v : o.a) v = u(g);
  for (float& v : o.b) v = u(g);
  return o;
}

void multiply(bool onednn, const Shape& s, Operands& o) {
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  if (onednn)
    dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.f, o.a.data(), lda, o.b.data(), ldb, 0.f,
               o.c.data(), s.n);
  else
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k,
                1.f, o.a.data(), lda, o.b.data(), ldb, 0.f, o.c.data(), s.n);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best time of one product over 20 tries of enough repetitions for about 20 M multiply-adds.
double best_time(bool onednn, const Shape& s, Operands& o) {
  const int reps = int(std::max<double>(1, 4e7 / s.flops()));
  double best = 1e9;
  for (int t = 0; t < 20; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) multiply(onednn, s, o);
    best = std::min(best, seconds_since(t0) / reps);
  }
  return best;
}

void alone(const char* title, const Shape* shapes, size_t count, std::mt19937& g) {
  std::printf("%s (one thread, hot cache; GFLOP/s)\n", title);
  double total[2] = {0, 0};
  for (size_t i = 0; i < count; ++i) {
    const Shape& s = shapes[i];
    Operands o = make(s, g);
    const double blas = best_time(false, s, o), dnnl = best_time(true, s, o);
    total[0] += blas, total[1] += dnnl;
    std::printf("  %-18s %c%c m %4ld n %4ld k %4ld  OpenBLAS %6.1f  oneDNN %6.1f\n", s.name, s.ta ? 'T' : 'N',
                s.tb ? 'T' : 'N', long(s.m), long(s.n), long(s.k), s.flops() / blas / 1e9, s.flops() / dnnl / 1e9);
  }
  std::printf("  sum of the best times: OpenBLAS %.3f ms, oneDNN %.3f ms\n", 1e3 * total[0], 1e3 * total[1]);
}

// Both cores: each thread runs every step shape `rounds` times over its own six copies.
void both_cores(std::mt19937& g) {
  constexpr int kCopies = 6, kRounds = 96;
  constexpr size_t kShapes = sizeof(kStep) / sizeof(kStep[0]);
  std::vector<Operands> ops[2];
  for (auto& per_core : ops)
    for (int c = 0; c < kCopies; ++c)
      for (const Shape& s : kStep) per_core.push_back(make(s, g));
  double flops = 0;
  for (const Shape& s : kStep) flops += s.flops();
  std::printf("the step's dense shapes on both cores at once, operands from L3 (GFLOP/s of both cores)\n");
  for (int round = 0; round < 6; ++round)
    for (bool onednn : {false, true}) {
      auto work = [&](std::vector<Operands>& mine) {
        omp_set_num_threads(1);  // this thread's OpenMP count: oneDNN threads nothing
        for (int r = 0; r < kRounds; ++r)
          for (size_t i = 0; i < kShapes; ++i) multiply(onednn, kStep[i], mine[(r % kCopies) * kShapes + i]);
      };
      const auto t0 = std::chrono::steady_clock::now();
      std::thread other(work, std::ref(ops[1]));
      work(ops[0]);
      other.join();
      std::printf("  round %d %-8s %6.1f\n", round, onednn ? "oneDNN" : "OpenBLAS",
                  2 * kRounds * flops / seconds_since(t0) / 1e9);
    }
}

// The two libraries agree on every step shape (largest difference of any element).
void agreement(std::mt19937& g) {
  double worst = 0;
  for (const Shape& s : kStep) {
    Operands o = make(s, g);
    multiply(false, s, o);
    const std::vector<float> blas = o.c;
    multiply(true, s, o);
    for (size_t i = 0; i < blas.size(); ++i) worst = std::max(worst, double(std::fabs(blas[i] - o.c[i])));
  }
  std::printf("largest difference between the libraries' products: %.3g\n", worst);
}

}  // namespace

int main() {
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  std::mt19937 g(1);
  agreement(g);
  alone("a split training step's dense products", kStep, sizeof(kStep) / sizeof(kStep[0]), g);
  alone("smaller products", kSmaller, sizeof(kSmaller) / sizeof(kSmaller[0]), g);
  both_cores(g);
}
