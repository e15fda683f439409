#pragma once
// Helpers shared by the tests that compare the engine's own passes with
// LibTorch's ops on whole models.
#include <string>

#include "nn/vit_config.h"
#include "util/helper_threads.h"

namespace translution::test_support {

// Runs body() with a process-wide switch (set(bool), on by default) off,
// switching it back on even if body throws.
template <typename Body>
auto with_switch_off(void (*set)(bool), Body body) {
  struct Restore {
    void (*set)(bool);
    ~Restore() { set(true); }
  } restore{set};
  set(false);
  return body();
}

// Forces the engine's split over `threads` parts for one scope, then restores it.
struct ScopedMatrixThreads {
  int before = matrix_threads();
  explicit ScopedMatrixThreads(int threads) { set_matrix_threads(threads); }
  ~ScopedMatrixThreads() { set_matrix_threads(before); }
};

// A small ViT of `model`: two blocks of width 24 with two heads of 16, on
// 28 x 21 images in 7 x 7 patches (a non-square 4 x 3 grid).
inline ViTConfig small_vit_config(const std::string& model) {
  ViTConfig c = preset_config("tiny", model);
  c.image_height = 28, c.image_width = 21, c.patch = 7, c.depth = 2, c.heads = 2, c.head_dim = 16, c.dim = 24;
  return c;
}

}  // namespace translution::test_support
