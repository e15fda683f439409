// The AMX tiles' own rate on this machine, for docs/benchmarks.md ("Session 12"):
// four accumulator tiles fed by two A and two B tiles, as nn/bf16_gemm's kernel,
// with the operand tiles loaded once (the multiplier alone) or reloaded from the
// same 4 KB every step (L1-resident loads). Not part of the engine or the build:
//   g++ -O2 bench/amx_peak.cpp -o /tmp/amx_peak && /tmp/amx_peak
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t column_bytes[16] = {};
  uint8_t rows[16] = {};
};

alignas(64) uint16_t a_tiles[2][512], b_tiles[2][512];  // zeros: the rate does not depend on the values
alignas(64) float sink[256];

// GFLOP/s of `steps` steps of four 16 x 16 x 32 tile products.
__attribute__((target("amx-tile,amx-bf16"))) double rate(long steps, bool reload) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.rows[t] = 16, config.column_bytes[t] = 64;
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, a_tiles[0], 64);
  _tile_loadd(5, a_tiles[1], 64);
  _tile_loadd(6, b_tiles[0], 64);
  _tile_loadd(7, b_tiles[1], 64);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < steps; ++i) {
    if (reload) {
      _tile_loadd(4, a_tiles[0], 64);
      _tile_loadd(5, a_tiles[1], 64);
      _tile_loadd(6, b_tiles[0], 64);
      _tile_loadd(7, b_tiles[1], 64);
    }
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, sink, 64);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  _tile_release();
  return steps * 4.0 * 16 * 16 * 32 * 2 / seconds / 1e9;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("amx-bf16") || syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
    std::fprintf(stderr, "this CPU or kernel gives no AMX bf16 tiles to this process\n");
    return 1;
  }
  for (int round = 0; round < 3; ++round)
    std::printf("one core: %.0f GFLOP/s with the tiles loaded once, %.0f reloading them every step\n",
                rate(2000000, false), rate(2000000, true));
  return 0;
}
