// One core's multiply-add rate on AVX-512 FMAs against AVX512-BF16's pair dot
// product (vdpbf16ps, 32 bfloat16 products per instruction), for docs/benchmarks.md
// ("Session 13"): twelve independent accumulators of each, in registers, so only
// the instructions' throughput limits. Not part of the engine or the build:
//   g++ -O2 bench/dot_rate.cpp -o /tmp/dot_rate && /tmp/dot_rate
#include <immintrin.h>

#include <chrono>
#include <cstdio>

namespace {

#define TWELVE(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECLARE(i) __m512 acc##i = _mm512_set1_ps(seed + i);
#define SUM(i) sum = _mm512_add_ps(sum, acc##i);

__attribute__((target("avx512f"), noinline)) float fma_loop(long steps, float seed) {
  TWELVE(DECLARE)
  const __m512 a = _mm512_set1_ps(seed), b = _mm512_set1_ps(0.9999f);
  for (long i = 0; i < steps; ++i) {
#define FMA(i) acc##i = _mm512_fmadd_ps(a, b, acc##i);
    TWELVE(FMA)
  }
  __m512 sum = _mm512_setzero_ps();
  TWELVE(SUM)
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx512f,avx512bf16"), noinline)) float dot_loop(long steps, float seed) {
  TWELVE(DECLARE)
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f);
  for (long i = 0; i < steps; ++i) {
#define DOT(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
    TWELVE(DOT)
  }
  __m512 sum = _mm512_setzero_ps();
  TWELVE(SUM)
  return _mm512_reduce_add_ps(sum);
}

}  // namespace

int main(int argc, char**) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) {
    std::printf("this CPU lacks AVX-512 F or BF16\n");
    return 1;
  }
  const long steps = 100000000;
  for (int round = 0; round < 3; ++round)
    for (int dot = 0; dot < 2; ++dot) {
      const auto start = std::chrono::steady_clock::now();
      const float result = dot ? dot_loop(steps, float(argc)) : fma_loop(steps, float(argc));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double per_instruction = dot ? 32 : 16;
      std::printf("%-9s %.2f G instructions/s, %.1f G multiply-adds/s (checksum %g)\n",
                  dot ? "vdpbf16ps" : "vfmadd", 12.0 * steps / s / 1e9, per_instruction * 12 * steps / s / 1e9,
                  double(result));
    }
  return 0;
}
