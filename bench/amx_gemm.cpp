// What Intel AMX (bfloat16 tiles, fp32 sums) would give a training step's dense
// products on this machine, against OpenBLAS's fp32 sgemm_: a measurement for
// docs/benchmarks.md ("Session 11"), not part of the engine or the build.
//   g++ -O2 -std=c++17 bench/amx_gemm.cpp -o /tmp/amx_gemm /usr/lib/x86_64-linux-gnu/libblas.so.3
//   env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=2 /tmp/amx_gemm 1600 192 576
// C [M x N] = A [M x K] B [K x N]: A's rows and B's columns rounded to bfloat16 and
// packed into 16 x 32 tiles (timed apart: the conversion pass), then one core
// sweeps 32 x 32 blocks of C with four accumulator tiles. M and N must be
// multiples of 32, K of 32. Prints both rates and the bf16 result's largest
// error against a double-precision reference, relative to C's largest entry.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

namespace {

constexpr long kRequestPermission = 0x1023;  // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
constexpr int kTileData = 18;
constexpr int kTileElements = 16 * 32;  // one 16-row tile of 32 bf16 (1 KB)

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t column_bytes[16] = {};
  uint8_t rows[16] = {};
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

// A as tiles: [M/16][K/32] tiles, each 16 rows of 32 consecutive k.
std::vector<uint16_t> pack_rows(const std::vector<float>& a, int M, int K) {
  std::vector<uint16_t> p(size_t(M) * K);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      p[(size_t(m / 16) * (K / 32) + k / 32) * kTileElements + (m % 16) * 32 + k % 32] = to_bf16(a[size_t(m) * K + k]);
  return p;
}

// B as tiles: [N/16][K/32] tiles, each 16 rows of k pairs, a row holding 16 columns' pairs (the pair layout
// TDPBF16PS multiplies).
std::vector<uint16_t> pack_columns(const std::vector<float>& b, int K, int N) {
  std::vector<uint16_t> p(size_t(K) * N);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      p[(size_t(n / 16) * (K / 32) + k / 32) * kTileElements + (k % 32 / 2) * 32 + (n % 16) * 2 + k % 2] =
          to_bf16(b[size_t(k) * N + n]);
  return p;
}

__attribute__((target("amx-tile,amx-bf16"))) void amx_product(const uint16_t* a, const uint16_t* b, float* c, int M,
                                                              int N, int K) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.rows[t] = 16, config.column_bytes[t] = 64;
  _tile_loadconfig(&config);
  const int kb = K / 32;
  for (int m = 0; m < M; m += 32)
    for (int n = 0; n < N; n += 32) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      const uint16_t* a0 = a + size_t(m / 16) * kb * kTileElements;
      const uint16_t* b0 = b + size_t(n / 16) * kb * kTileElements;
      for (int k = 0; k < kb; ++k) {
        _tile_loadd(4, a0 + k * kTileElements, 64);
        _tile_loadd(5, a0 + (kb + k) * kTileElements, 64);
        _tile_loadd(6, b0 + k * kTileElements, 64);
        _tile_loadd(7, b0 + (kb + k) * kTileElements, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      float* out = c + size_t(m) * N + n;
      _tile_stored(0, out, N * 4);
      _tile_stored(1, out + 16, N * 4);
      _tile_stored(2, out + size_t(16) * N, N * 4);
      _tile_stored(3, out + size_t(16) * N + 16, N * 4);
    }
  _tile_release();
}

template <typename F>
double best_seconds(int calls, F f) {  // best of 4 rounds of `calls` calls, per call
  double best = 1e30;
  for (int round = 0; round < 4; ++round) {
    const double t0 = now();
    for (int i = 0; i < calls; ++i) f();
    best = std::min(best, (now() - t0) / calls);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: amx_gemm M K N   (M, N multiples of 32, K of 32)\n");
    return 2;
  }
  const int M = std::atoi(argv[1]), K = std::atoi(argv[2]), N = std::atoi(argv[3]);
  if (M <= 0 || K <= 0 || N <= 0 || M % 32 || N % 32 || K % 32) {
    std::fprintf(stderr, "M and N must be positive multiples of 32 and K of 32, got %s %s %s\n", argv[1], argv[2],
                 argv[3]);
    return 2;
  }
  if (!__builtin_cpu_supports("amx-bf16") || syscall(SYS_arch_prctl, kRequestPermission, kTileData) != 0) {
    std::fprintf(stderr, "this CPU or kernel gives no AMX bf16 tiles to this process\n");
    return 1;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N), reference(size_t(M) * N);
  for (float& x : a) x = uniform(rng);
  for (float& x : b) x = uniform(rng);
  const double flop = 2.0 * M * N * K;

  const float one = 1, zero = 0;  // row-major c = a b through the column-major interface: c^T = b^T a^T
  const double blas = best_seconds(10, [&] { sgemm_("N", "N", &N, &M, &K, &one, b.data(), &N, a.data(), &K, &zero,
                                                    reference.data(), &N); });
  std::vector<uint16_t> ap, bp;
  const double pack = best_seconds(3, [&] { ap = pack_rows(a, M, K), bp = pack_columns(b, K, N); });
  const double amx = best_seconds(10, [&] { amx_product(ap.data(), bp.data(), c.data(), M, N, K); });

  double error = 0, largest = 0;
  for (int m = 0; m < M; m += 7)
    for (int n = 0; n < N; n += 5) {
      double exact = 0;
      for (int k = 0; k < K; ++k) exact += double(a[size_t(m) * K + k]) * b[size_t(k) * N + n];
      error = std::max(error, std::abs(exact - c[size_t(m) * N + n]));
      largest = std::max(largest, std::abs(exact));
    }
  std::printf("M=%d K=%d N=%d: OpenBLAS fp32 %.1f us (%.1f GFLOP/s); AMX bf16, one core, %.1f us (%.1f GFLOP/s) "
              "after %.1f us packing (scalar); bf16 error %.2g of the largest entry\n",
              M, K, N, blas * 1e6, flop / blas / 1e9, amx * 1e6, flop / amx / 1e9, pack * 1e6, error / largest);
  return 0;
}
