// The per-matrix products of a batch-1 Translution ViT-A/12 forward, alone: 18
// banks of 172 matrices (192 x 192 floats, 456 MB), each multiplied by 15 rows,
// through OpenBLAS and through the engine's row kernel (core/nn/row_gemm.cpp),
// without and with the next matrix prefetched, with the matrices streamed from
// memory and with the same two matrices over and over (in cache); and the
// time to only read the 456 MB once, the floor of any such kernel. Last, LoR's
// per-matrix products at batch 32 (464 rows x 24 x 24 per matrix) through OpenBLAS,
// one image's larger matrices (28-49 rows) in one call or in chunks of 24 rows, and
// one image's dense-layer products on one thread or split by columns over two (with
// a helper thread already running, and with a new thread started per call), and on
// the row kernel with a transposed copy of the weight.
// docs/benchmarks.md ("Session 8", "What is left") quotes it. Not part of the build:
//   g++ -O3 -funroll-loops -Icore bench/small_gemm.cpp core/nn/row_gemm.cpp -o /tmp/small_gemm
//       /usr/lib/x86_64-linux-gnu/libblas.so.3 -lpthread   (one line)
//   OPENBLAS_NUM_THREADS=1 /tmp/small_gemm [threads=1] [rows per product=15]
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "standalone_kernels.h"

namespace {

constexpr int kIn = 192, kOut = 192, kEntries = 172, kBanks = 18;
int g_rows = 15;  // rows per product: one image's; the second argument sets it (464: batch 32's)

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Row-major c[m x n] = a[m x k] w[k x n] through the Fortran interface.
void blas(const float* a, const float* w, float* c) {
  const int m = g_rows, n = kOut, k = kIn;
  const float one = 1, zero = 0;
  sgemm_("N", "N", &n, &m, &k, &one, w, &n, a, &k, &zero, c, &n);
}

// Sum of n floats: a read-only stream at full width.
__attribute__((target("avx512f"))) float read_all(const float* p, size_t n) {
  __m512 s = _mm512_setzero_ps(), t = _mm512_setzero_ps();
  for (size_t i = 0; i + 32 <= n; i += 32) {
    s = _mm512_add_ps(s, _mm512_loadu_ps(p + i));
    t = _mm512_add_ps(t, _mm512_loadu_ps(p + i + 16));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s, t));
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (argc > 2) g_rows = std::max(1, std::atoi(argv[2]));
  std::vector<float> weights(size_t(kBanks) * kEntries * kIn * kOut), input(g_rows * kIn);
  for (auto& x : weights) x = float(std::rand() % 1000) / 1000.f - 0.5f;
  for (auto& x : input) x = float(std::rand() % 1000) / 1000.f - 0.5f;
  std::vector<float> out[3] = {std::vector<float>(size_t(threads) * g_rows * kOut),
                               std::vector<float>(size_t(threads) * g_rows * kOut),
                               std::vector<float>(size_t(threads) * g_rows * kOut)};
  for (int round = 0; round < 3; ++round) {
    const double start = now();
    std::vector<float> sums(static_cast<size_t>(threads));
    const size_t part = weights.size() / size_t(threads);
    auto read = [&](int t) { sums[size_t(t)] = read_all(weights.data() + size_t(t) * part, part); };
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t) helpers.emplace_back(read, t);
    read(0);
    for (auto& h : helpers) h.join();
    const double seconds = now() - start;
    std::printf("read only                 %d thread(s): %6.1f ms for %.0f MB, %5.1f GB/s (sum %g)\n", threads,
                seconds * 1e3, weights.size() * 4.0 / 1e6, weights.size() * 4.0 / seconds / 1e9, double(sums[0]));
  }
  const char* names[3] = {"OpenBLAS", "row kernel", "row, prefetch"};
  const bool row = translution::row_gemm_available();
  if (!row) std::printf("this CPU has no AVX-512: the row kernel's rows are left out\n");
  for (int cached = 0; cached < 2; ++cached)
    for (int kernel = 0; kernel < (row ? 3 : 1); ++kernel)
      for (int round = 0; round < 3; ++round) {
        const double start = now();
        auto work = [&](int t) {
          float* c = out[kernel].data() + size_t(t) * g_rows * kOut;
          for (int b = 0; b < kBanks; ++b)
            for (int e = t; e < kEntries; e += threads) {
              const size_t matrix = cached ? size_t(e % 2) : size_t(b) * kEntries + size_t(e);
              const float* w = weights.data() + matrix * kIn * kOut;
              // The engine prefetches the next matrix its part will take (here: the next of the bank).
              const float* next = kernel == 2 && !cached && e + threads < kEntries ? w + threads * kIn * kOut : nullptr;
              if (kernel == 0) blas(input.data(), w, c);
              else translution::row_gemm(g_rows, kOut, kIn, input.data(), kIn, w, kOut, c, kOut, next,
                                         int64_t(sizeof(float)) * kIn * kOut);
            }
        };
        std::vector<std::thread> helpers;
        for (int t = 1; t < threads; ++t) helpers.emplace_back(work, t);
        work(0);
        for (auto& h : helpers) h.join();
        const double seconds = now() - start;
        std::printf("%-15s %-9s %d thread(s): %6.1f ms for %d products, %5.1f us each\n", names[kernel],
                    cached ? "in cache" : "streamed", threads, seconds * 1e3, kBanks * kEntries,
                    seconds / (kBanks * kEntries) * threads * 1e6);
      }
  {  // LoR-Translution ViT-A/12, batch 32: 172 matrices of 24 x 24, 464 rows each
    const int rows = 464, width = 24;
    std::vector<float> a(size_t(kEntries) * rows * width, 0.5f), w(size_t(kEntries) * width * width, 0.25f),
        c(size_t(kEntries) * rows * width);
    for (int round = 0; round < 3; ++round) {
      const double start = now();
      for (int repeat = 0; repeat < 20; ++repeat)
        for (int e = 0; e < kEntries; ++e) {
          const float one = 1, zero = 0;
          sgemm_("N", "N", &width, &rows, &width, &one, w.data() + size_t(e) * width * width, &width,
                 a.data() + size_t(e) * rows * width, &width, &zero, c.data() + size_t(e) * rows * width, &width);
        }
      const double each = (now() - start) / (20.0 * kEntries);
      std::printf("OpenBLAS, LoR shape 464 x 24 x 24: %5.1f us each, %5.1f GFLOP/s\n", each * 1e6,
                  2.0 * rows * width * width / each / 1e9);
    }
  }
  {  // One image's larger matrices (28-49 rows): one call, or row chunks of at most 24 rows, each
     // under OpenBLAS's small-matrix limit (1e6 multiply-adds), which it runs without packing W.
    std::vector<float> a(49 * kIn, 0.5f), c(49 * kOut);
    const int streamed = kBanks / 3 * kEntries;  // 1032 distinct matrices: far more than the caches hold
    for (int rows : {28, 35, 42, 49})
      for (int cap : {rows, 24})
        for (int round = 0; round < 3; ++round) {
          const double start = now();
          for (int e = 0; e < streamed; ++e)
            for (int r = 0; r < rows; r += cap) {
              const int m = std::min(cap, rows - r), n = kOut, k = kIn;
              const float one = 1, zero = 0;
              sgemm_("N", "N", &n, &m, &k, &one, weights.data() + size_t(e) * kIn * kOut, &n, a.data() + r * kIn, &k,
                     &zero, c.data() + r * kOut, &n);
            }
          std::printf("OpenBLAS, %2d rows x 192 x 192, streamed, rows per call %2d: %5.1f us each\n", rows, cap,
                      (now() - start) / streamed * 1e6);
        }
  }
  {  // One image's dense layers (50 tokens): x [50 x K] W^T, W [N x K] as LibTorch stores it, on one
     // thread, and split by output columns with a helper thread that is already running (as
     // nn/dense does through util/helper_threads).
    std::atomic<long> go{0}, done{0};
    std::function<void()> job;
    std::thread helper([&] {
      for (long seen = 0;;) {
        long g;
        while ((g = go.load()) == seen) {
        }
        if (g < 0) return;
        seen = g;
        job();
        done.store(seen);
      }
    });
    const int shapes[][2] = {{576, 192}, {192, 192}, {768, 192}, {192, 768}};  // qkv, projection, MLP in, out
    for (const auto& shape : shapes) {
      const int rows = 50, n = shape[0], k = shape[1];
      std::vector<float> x(size_t(rows) * k, 0.5f), w(size_t(n) * k, 0.25f), c(size_t(rows) * n);
      auto product = [&](int n0, int n1) {
        const int cols = n1 - n0;
        const float one = 1, zero = 0;
        sgemm_("T", "N", &cols, &rows, &k, &one, w.data() + size_t(n0) * k, &k, x.data(), &k, &zero, c.data() + n0,
               &n);
      };
      const char* ways[3] = {"one thread", "columns split in two", "split, a new thread per call"};
      for (int split = 0; split < 3; ++split) {
        auto once = [&] {
          if (!split) return product(0, n);
          const int half = (n / 2 + 15) / 16 * 16;
          if (split == 2) {  // what a split costs when each call starts its thread
            std::thread t([&] { product(half, n); });
            product(0, half);
            return t.join();
          }
          job = [&] { product(half, n); };
          const long ticket = go.load() + 1;
          go.store(ticket);
          product(0, half);
          while (done.load() != ticket) {
          }
        };
        for (int i = 0; i < 100; ++i) once();
        const double start = now();
        for (int i = 0; i < 1000; ++i) once();
        std::printf("OpenBLAS, dense 50 x %3d x %3d, %s: %6.1f us\n", k, n, ways[split], (now() - start) / 1000 * 1e6);
      }
      if (!row) continue;
      // The row kernel on a kept copy of w^T ([k x n]), one thread: no packing per call.
      std::vector<float> wt(size_t(k) * n);
      for (int j = 0; j < n; ++j)
        for (int p = 0; p < k; ++p) wt[size_t(p) * n + j] = w[size_t(j) * k + p];
      const double start = now();
      for (int i = 0; i < 1000; ++i) translution::row_gemm(rows, n, k, x.data(), k, wt.data(), n, c.data(), n);
      std::printf("row kernel, dense 50 x %3d x %3d, w^T kept, one thread: %6.1f us\n", k, n,
                  (now() - start) / 1000 * 1e6);
    }
    go.store(-1);
    helper.join();
  }
  double worst = 0;
  for (size_t i = 0; row && i < out[0].size(); ++i)
    worst = std::max({worst, double(std::fabs(out[0][i] - out[1][i])), double(std::fabs(out[0][i] - out[2][i]))});
  std::printf("largest difference between the kernels: %g\n", worst);
}
