// LoR-Translution's relative operators at one core's share of a split training
// step (ViT-A/12 at 84x84: half of batch 32, 7 x 7 patches + CLS, 24 x 24
// matrices, 3 heads): relative_logits and relative_values, forward and backward,
// with the batch across the vector lanes (nn/pair_lanes.h), with the pair
// arithmetic inside each matrix's block of rows (nn/pair_blocks.h) and in separate
// passes (nn/pair_kernels.h), alternating every repetition in one process. Prints
// the median of each phase (docs/benchmarks.md, "Session 17" and "Session 20").
// Not part of the build. From the repository root, after a build:
//   g++ -O2 -std=c++17 -Icore -I/usr/include/torch/csrc/api/include bench/pair_blocks.cpp \
//       build/core/libtranslution_core.a -o /tmp/pair_blocks -ltorch -ltorch_cpu -lc10 -lpthread -ldl
//   env -u OPENBLAS_CORETYPE /tmp/pair_blocks [batch, default 16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "nn/pair_kernels.h"
#include "nn/relative_ops.h"
#include "nn/token_layout.h"
#include "nn/translution_attention.h"
#include "util/allocator.h"
#include "util/helper_threads.h"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace translution;
  const int64_t B = argc > 1 ? std::atoi(argv[1]) : 16, N = 50, C = 24, H = 3, kRounds = 60;
  set_freed_memory(FreedMemory::Pool);  // as the CLI: no fresh pages per call
  ScopedOneCore one;                    // as each core's share of a split step
  const RelativeTable table = make_relative_table(TokenLayout::grid(7, 7));
  const PairOrder order = make_pair_order(table);
  at::manual_seed(0);
  auto input = [&] { return at::randn({B, N, C}).requires_grad_(); };
  auto bank = [&] { return make_relative_bank(table.entries, C, C).requires_grad_(); };
  const at::Tensor xq = input(), xk = input(), xv = input(), wq = bank(), wk = bank(), wv = bank();
  const at::Tensor alpha = at::softmax(at::randn({B, H, N, N}), -1).requires_grad_();
  const char* names[4] = {"logits forward", "logits backward", "values forward", "values backward"};
  const PairKernels variants[3] = {PairKernels::Lanes, PairKernels::Blocked, PairKernels::Fused};
  std::vector<double> times[3][4];
  for (int round = 0; round < kRounds; ++round)
    for (int variant = 0; variant < 3; ++variant) {
      set_pair_kernels(variants[variant]);
      const double t0 = now();
      const at::Tensor logits = relative_logits(order, xq, wq, xk, wk, H);
      const double t1 = now();
      logits.backward(at::ones_like(logits));
      const double t2 = now();
      const at::Tensor values = relative_values(order, alpha, xv, wv, false);
      const double t3 = now();
      values.backward(at::ones_like(values));
      const double t4 = now();
      const double phases[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
      for (int p = 0; p < 4; ++p) times[variant][p].push_back(phases[p]);
    }
  for (int variant = 0; variant < 3; ++variant) {
    double total = 0;
    std::printf("%-7s batch %lld:", pair_kernels_name(variants[variant]), static_cast<long long>(B));
    for (int p = 0; p < 4; ++p) {
      const double ms = median_ms(times[variant][p]);
      total += ms;
      std::printf("  %s %.3f", names[p], ms);
    }
    std::printf("  total %.3f ms\n", total);
  }
  return 0;
}
