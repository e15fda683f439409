// One row-major fp32 product through the process's BLAS (sgemm_), timed: for
// comparing OpenBLAS's kernel sets on the same machine (docs/benchmarks.md,
// "Session 10"). Prints the kernels OpenBLAS runs and, for each of 4 rounds of 20
// calls, the time per call and GFLOP/s. Not part of the build:
//   g++ -O2 bench/blas_gemm.cpp -o /tmp/blas_gemm /usr/lib/x86_64-linux-gnu/libblas.so.3 -ldl
//   OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 /tmp/blas_gemm 1600 192 576
//   env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 /tmp/blas_gemm 1600 192 576
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Row-major c[m x n] = a[m x k] b[k x n], through the column-major interface as c^T = b^T a^T.
void product(int m, int n, int k, const float* a, const float* b, float* c) {
  const float one = 1, zero = 0;
  sgemm_("N", "N", &n, &m, &k, &one, b, &n, a, &k, &zero, c, &n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: blas_gemm M K N\n");
    return 2;
  }
  const int M = std::atoi(argv[1]), K = std::atoi(argv[2]), N = std::atoi(argv[3]);
  if (M <= 0 || K <= 0 || N <= 0) {
    std::fprintf(stderr, "M, K and N must be positive, got %s %s %s\n", argv[1], argv[2], argv[3]);
    return 2;
  }
  using CoreName = char* (*)();
  const auto core = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  std::printf("BLAS kernels: %s\n", core ? core() : "(not OpenBLAS)");
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
  for (auto& x : a) x = float(std::rand() % 100) / 100.f;
  for (auto& x : b) x = float(std::rand() % 100) / 100.f;
  for (int round = 0; round < 4; ++round) {
    constexpr int kCalls = 20;
    const double start = now();
    for (int i = 0; i < kCalls; ++i) product(M, N, K, a.data(), b.data(), c.data());
    const double each = (now() - start) / kCalls;
    std::printf("M=%d K=%d N=%d: %8.1f us per call, %6.1f GFLOP/s\n", M, K, N, each * 1e6, 2.0 * M * N * K / each / 1e9);
  }
  return 0;
}
