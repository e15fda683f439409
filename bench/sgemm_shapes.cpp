// An LD_PRELOAD library that times every sgemm_ call of a process by shape and,
// at exit, prints the 40 shapes that took longest (column-major m, n, k as the
// BLAS sees them; calls, total time, GFLOP/s per call). It showed where a LoR
// training step's GEMM time goes (docs/benchmarks.md, "Session 10"). Not part of
// the build:
//   g++ -O2 -shared -fPIC bench/sgemm_shapes.cpp -o /tmp/libsgemm_shapes.so -ldl
//   env -u OPENBLAS_CORETYPE LD_PRELOAD=/tmp/libsgemm_shapes.so build/app/translution bench --model lor
//       --preset A --image 84 --patch 12 --mode train --batch 32 --steps 4 --warmup 1   (one line)
// The engine finds sgemm_ with dlsym(RTLD_DEFAULT), so it finds this one first.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace {

using Shape = std::tuple<char, char, int, int, int>;
struct Time {
  long calls = 0;
  double ns = 0;
};
using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

std::mutex g_mutex;
auto* g_times = new std::map<Shape, Time>;  // never freed: callers may run during exit

}  // namespace

extern "C" void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
                       const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
                       const int* ldc) {
  static const auto real = reinterpret_cast<Sgemm>(dlsym(RTLD_NEXT, "sgemm_"));
  const auto start = std::chrono::steady_clock::now();
  real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const std::lock_guard<std::mutex> lock(g_mutex);
  Time& t = (*g_times)[Shape(*ta, *tb, *m, *n, *k)];
  ++t.calls, t.ns += ns;
}

__attribute__((destructor)) static void report() {
  std::vector<std::pair<Shape, Time>> rows(g_times->begin(), g_times->end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.ns > y.second.ns; });
  double total = 0;
  for (const auto& row : rows) total += row.second.ns;
  std::fprintf(stderr, "sgemm_: %.1f ms in %zu shapes\n", total / 1e6, rows.size());
  for (size_t i = 0; i < rows.size() && i < 40; ++i) {
    const auto& [shape, t] = rows[i];
    const double macs = double(std::get<2>(shape)) * std::get<3>(shape) * std::get<4>(shape);
    std::fprintf(stderr, "%c%c m=%5d n=%5d k=%5d calls=%7ld total=%8.1f ms per=%8.1f us %6.1f GFLOP/s\n",
                 std::get<0>(shape), std::get<1>(shape), std::get<2>(shape), std::get<3>(shape), std::get<4>(shape),
                 t.calls, t.ns / 1e6, t.ns / t.calls / 1e3, 2 * macs * t.calls / t.ns);
  }
}
