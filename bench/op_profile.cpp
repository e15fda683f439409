// LibTorch's own profiler over training steps of a ViT-A/12 at 84x84 (batch 32,
// forward and backward, no optimizer): writes a Chrome trace whose per-op self
// times bench/op_self_time.py sums. For finding where a training step's time goes
// outside the GEMMs (docs/benchmarks.md, "Session 11"); not part of the build.
// The profiler adds its own cost to every op, so its times are a guide: measure a
// change with `translution bench --compare`. From the repository root, after a build:
//   g++ -O2 -std=c++17 -Icore -I/usr/include/torch/csrc/api/include bench/op_profile.cpp \
//       build/core/libtranslution_core.a -o /tmp/op_profile -ltorch -ltorch_cpu -lc10 -lpthread -ldl
//   env -u OPENBLAS_CORETYPE /tmp/op_profile attention /tmp/trace.json
//   python3 bench/op_self_time.py /tmp/trace.json 5
#include <cstdio>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/nn/functional/loss.h>

#include "nn/vit.h"
#include "nn/vit_config.h"
#include "util/allocator.h"
#include "util/device.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: op_profile MODEL TRACE.json   (5 profiled steps after 3 unprofiled ones)\n");
    return 2;
  }
  using namespace translution;
  configure_threads();   // as the CLI: one intra-op thread
  keep_freed_memory();   // and its allocator
  ViT vit(preset_config("A", argv[1]));
  const at::Tensor images = at::randn({32, 1, 84, 84}), labels = at::randint(0, 10, {32}, at::kLong);
  const auto step = [&] {
    vit->zero_grad();
    torch::nn::functional::cross_entropy(vit->forward(images), labels).backward();
  };
  for (int i = 0; i < 3; ++i) step();
  {
    torch::autograd::profiler::RecordProfile profile{std::string(argv[2])};
    for (int i = 0; i < 5; ++i) step();
  }
  return 0;
}
