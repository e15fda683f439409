#pragma once
// Helpers shared by the tests that compare the engine's own passes with
// LibTorch's ops, and its settings with one another.
#include <functional>
#include <optional>
#include <string>

#include "nn/vit_config.h"
#include "util/engine_options.h"

namespace translution::test_support {

// The engine options a test runs under: each change installs a copy of the
// current options with one field changed, in force until the next change or the
// end of the test (test_main.cpp's listener restores the defaults after each).
inline std::optional<ScopedEngineOptions>& test_options() {
  static std::optional<ScopedEngineOptions> options;
  return options;
}
inline void change_options(const std::function<void(EngineOptions&)>& change) {
  EngineOptions next = engine_options();
  change(next);
  test_options().reset();
  test_options().emplace(next);
}
inline void restore_default_options() { test_options().reset(); }

inline void use_reference(bool on) {
  change_options([&](EngineOptions& o) { o.reference = on; });
}
inline void use_matrix_threads(int threads) {
  change_options([&](EngineOptions& o) { o.matrix_threads = threads; });
}
inline void use_projection(ProjectionAlgorithm a) {
  change_options([&](EngineOptions& o) { o.projection = a; });
}
inline void use_recompute(bool on) {
  change_options([&](EngineOptions& o) { o.recompute_pair_rows = on; });
}
inline void use_batch_split(BatchSplit s) {
  change_options([&](EngineOptions& o) { o.batch_split = s; });
}
inline void use_bf16_tiles(bool on) {
  change_options([&](EngineOptions& o) { o.bf16_tiles = on; });
}
inline void use_cls_only_last_block(bool on) {
  change_options([&](EngineOptions& o) { o.cls_only_last_block = on; });
}
inline void use_query_reassociation(bool on) {
  change_options([&](EngineOptions& o) { o.query_reassociation = on; });
}

// Runs body() with one option changed for its scope only, restored even if body throws.
template <typename T, typename Body>
auto with_option(T EngineOptions::*field, T value, Body body) {
  const ScopedEngineOptions scope(engine_options_with(field, value));
  return body();
}
// Runs body() on LibTorch's ops (the reference) instead of the engine's kernels.
template <typename Body>
auto on_reference(Body body) {
  return with_option(&EngineOptions::reference, true, body);
}

// Forces the engine's split over `threads` parts for one scope, then restores it.
struct ScopedMatrixThreads {
  ScopedEngineOptions scope;
  explicit ScopedMatrixThreads(int threads)
      : scope(engine_options_with(&EngineOptions::matrix_threads, threads)) {}
};

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
