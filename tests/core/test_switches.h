#pragma once
// Helpers shared by the tests that compare the engine's own passes with
// LibTorch's ops, and its settings with one another.
#include <string>

#include "nn/vit_config.h"
#include "util/engine_options.h"

namespace translution::test_support {

// The options a test computes under are its own values, handed to every
// forward, kernel and optimizer it calls (nothing in the engine keeps options):
// EngineOptions{} for the defaults, with(options, &EngineOptions::field, value)
// for one change, and these for the common ones.

// LibTorch's ops (the reference) instead of the engine's kernels: the oracle
// the kernels are compared with.
inline EngineOptions reference_options(EngineOptions options = {}) {
  return with(options, &EngineOptions::reference, true);
}
// The engine's split forced over `threads` parts (1: all on the calling thread).
inline EngineOptions threads_options(int threads, EngineOptions options = {}) {
  return with(options, &EngineOptions::matrix_threads, threads);
}

// A small ViT of `model`: two blocks of width 24 with two heads of 16, on
// 28 x 21 images in 7 x 7 patches (a non-square 4 x 3 grid).
inline ViTConfig small_vit_config(const std::string& model) {
  ViTConfig c = preset_config("tiny", model);
  c.image_height = 28;
  c.image_width = 21;
  c.patch = 7;
  c.depth = 2;
  c.heads = 2;
  c.head_dim = 16;
  c.dim = 24;
  return c;
}

}  // namespace translution::test_support

// Tests of the AVX-512 and bfloat16 kernels skip only where the CPU lacks the
// instructions; where it has them, the kernels must be there (a build or a check
// that lost them fails instead of passing quietly).
#define SKIP_UNLESS_CPU_HAS(feature, available, why_not)                            \
  if (!__builtin_cpu_supports(feature)) GTEST_SKIP() << "this CPU has no " feature; \
  ASSERT_TRUE(available) << "this CPU has " feature ", but the engine's kernels are not there: " << why_not
#define SKIP_WITHOUT_AVX512_KERNEL(available) SKIP_UNLESS_CPU_HAS("avx512f", available, "")
#define SKIP_WITHOUT_BF16_PRODUCTS() \
  SKIP_UNLESS_CPU_HAS("avx512bf16", bf16_gemm_available(), bf16_gemm_unavailable_reason())
