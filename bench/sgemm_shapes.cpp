// An LD_PRELOAD library that times every sgemm_ call of a process by shape and,
// at exit, prints the 40 shapes that took longest (column-major m, n, k as the
// BLAS sees them; calls, total time, GFLOP/s per call); and the same for oneDNN's
// dnnl_sgemm (row-major m, n, k), which nn/raw_gemm sends the larger products of
// one thread each since session 23. It showed where a LoR training step's GEMM
// time goes (docs/benchmarks.md, "Session 10") and which products of a step or
// of one image run on oneDNN ("Session 23"). Not part of the build:
//   g++ -O2 -shared -fPIC bench/sgemm_shapes.cpp -o /tmp/libsgemm_shapes.so -ldl
//   env -u OPENBLAS_CORETYPE LD_PRELOAD=/tmp/libsgemm_shapes.so build/app/translution bench --model lor
//       --preset A --image 84 --patch 12 --mode train --batch 32 --steps 4 --warmup 1   (one line)
// The engine finds sgemm_ and dnnl_sgemm with dlsym(RTLD_DEFAULT), so it finds these first.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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

using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);

std::mutex g_mutex;
auto* g_times = new std::map<Shape, Time>;         // never freed: callers may run during exit
auto* g_onednn_times = new std::map<Shape, Time>;

void record(std::map<Shape, Time>& times, const Shape& shape, std::chrono::steady_clock::time_point start) {
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const std::lock_guard<std::mutex> lock(g_mutex);
  Time& t = times[shape];
  ++t.calls, t.ns += ns;
}

void report_shapes(const char* name, const std::map<Shape, Time>& times) {
  std::vector<std::pair<Shape, Time>> rows(times.begin(), times.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.ns > y.second.ns; });
  double total = 0;
  for (const auto& row : rows) total += row.second.ns;
  std::fprintf(stderr, "%s: %.1f ms in %zu shapes\n", name, total / 1e6, rows.size());
  for (size_t i = 0; i < rows.size() && i < 40; ++i) {
    const auto& [shape, t] = rows[i];
    const double macs = double(std::get<2>(shape)) * std::get<3>(shape) * std::get<4>(shape);
    std::fprintf(stderr, "%c%c m=%5d n=%5d k=%5d calls=%7ld total=%8.1f ms per=%8.1f us %6.1f GFLOP/s\n",
                 std::get<0>(shape), std::get<1>(shape), std::get<2>(shape), std::get<3>(shape), std::get<4>(shape),
                 t.calls, t.ns / 1e6, t.ns / t.calls / 1e3, 2 * macs * t.calls / t.ns);
  }
}

}  // namespace

extern "C" void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
                       const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
                       const int* ldc) {
  static const auto real = reinterpret_cast<Sgemm>(dlsym(RTLD_NEXT, "sgemm_"));
  const auto start = std::chrono::steady_clock::now();
  real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  record(*g_times, Shape(*ta, *tb, *m, *n, *k), start);
}

extern "C" int dnnl_sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  static const auto real = reinterpret_cast<DnnlSgemm>(dlsym(RTLD_NEXT, "dnnl_sgemm"));
  const auto start = std::chrono::steady_clock::now();
  const int status = real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  record(*g_onednn_times, Shape(ta, tb, int(m), int(n), int(k)), start);
  return status;
}

__attribute__((destructor)) static void report() {
  report_shapes("sgemm_", *g_times);
  report_shapes("dnnl_sgemm (row-major)", *g_onednn_times);
}
