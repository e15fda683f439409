#include "util/fma_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

#include "util/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace translution {
namespace {

#if defined(__x86_64__)
// Chains = independent accumulators: the FMA latency (4 cycles) times the units
// (2) is 8 in flight; 24 (AVX-512, 32 registers) and 12 (AVX2, 16) leave margin
// and room for the two operands.
constexpr int kChains512 = 24, kChains256 = 12;

__attribute__((target("avx512f"))) float chains512(int64_t iterations) {
  __m512 acc[kChains512];
  for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512 scale = _mm512_set1_ps(0.999f), shift = _mm512_set1_ps(1e-4f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains512; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];  // (GCC 12's _mm512_reduce_add_ps warns of an uninitialized temporary)
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float x : lanes) total += x;
  return total;
}

__attribute__((target("avx2,fma"))) float chains256(int64_t iterations) {
  __m256 acc[kChains256];
  for (int i = 0; i < kChains256; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 scale = _mm256_set1_ps(0.999f), shift = _mm256_set1_ps(1e-4f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains256; ++i) acc[i] = _mm256_fmadd_ps(acc[i], scale, shift);
  }
  alignas(32) float lanes[8];
  __m256 sum = acc[0];
  for (int i = 1; i < kChains256; ++i) sum = _mm256_add_ps(sum, acc[i]);
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float x : lanes) total += x;
  return total;
}
#endif

struct Loop {
  float (*run)(int64_t) = nullptr;
  double flops_per_iteration = 0;
  const char* isa = "";
};

Loop pick_loop() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return {chains512, 2.0 * 16 * kChains512, "avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {chains256, 2.0 * 8 * kChains256, "avx2"};
#endif
  return {};
}

// One round: every thread starts together and runs `iterations`; the wall time
// until the last one ends is the round's time.
double round_seconds(const Loop& loop, int threads, int64_t iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<float> sink{0};  // keeps the loops' results alive
  std::vector<std::thread> workers;
  try {
    for (int t = 1; t < threads; ++t)
      workers.emplace_back([&] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        sink.store(loop.run(iterations), std::memory_order_relaxed);
      });
  } catch (const std::system_error& e) {  // release the ones started, then say why
    go.store(true, std::memory_order_release);
    for (auto& w : workers) w.join();
    throw Error(std::string("could not start a thread to measure the cores' FMA peak: ") + e.what());
  }
  while (ready.load() < threads - 1) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  sink.store(loop.run(iterations), std::memory_order_relaxed);
  for (auto& w : workers) w.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

FmaPeak measure_fma_peak(int cores, double seconds) {
  const Loop loop = pick_loop();
  if (!loop.run) return {};
  cores = std::max(1, cores);
  // Size the rounds from a short one on one core, so a slow CPU is not kept long.
  const int64_t probe = 20000;
  const double probe_seconds = std::max(1e-6, round_seconds(loop, 1, probe));
  const int64_t iterations = std::max<int64_t>(probe, int64_t(double(probe) * seconds / probe_seconds));
  double best = 1e30;
  for (int round = 0; round < 3; ++round) best = std::min(best, round_seconds(loop, cores, iterations));
  return {double(cores) * double(iterations) * loop.flops_per_iteration / best / 1e9, loop.isa};
}

}  // namespace translution
