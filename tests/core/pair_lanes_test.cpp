// The relative operators with the batch across the vector lanes (cpu/pair_lanes.h)
// against the ATen expressions in double precision: the lanes run in float only
// (batches of 16 images, inputs and rows 8 to 32 wide), so the float results are
// held to float's accuracy against an exact reference. LoR's shape (3 heads of 8,
// every head weighing all 24 of v), sliced values, plain query or key sides, one
// and two groups of images, the CLS query alone, matrices split over parts, and
// the kernels switched between a forward and its backward.
#include "cpu/pair_lanes.h"

#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/helper_threads.h"
#include "cpu/kernel_observer.h"
#include "cpu/pair_kernels.h"
#include "nn/pair_order.h"
#include "nn/relative_logits.h"
#include "nn/relative_values.h"
#include "nn/token_layout.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "util/device.h"

namespace translution {
namespace {

using test_support::max_relative_error;

struct Shape {
  int64_t heads, width, channels;  // D = heads x width; C input channels
  bool head_sliced;                // values: head h weighs its own slice, or all of v (LoR)
  bool plain_key = false, plain_query = false;
};

std::string describe(const Shape& s) {
  return std::to_string(s.heads) + " heads of " + std::to_string(s.width) + ", " +
         std::to_string(s.channels) + " channels" + (s.head_sliced ? ", sliced" : "") +
         (s.plain_key ? ", plain keys" : "") + (s.plain_query ? ", plain queries" : "");
}

// Both operators' outputs and every input's gradient, in the inputs' type, under
// `engine`: the engine's kernels, or the reference (ATen expressions).
std::vector<at::Tensor> run(const EngineOptions& engine, const PairOrder& order,
                            const std::vector<at::Tensor>& inputs, const Shape& s) {
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& t : inputs)
    leaves.push_back(t.defined() ? t.detach().clone().requires_grad_(true) : t);
  const at::Tensor logits =
      relative_logits(engine, order, leaves[0], leaves[1], leaves[2], leaves[3], s.heads);
  const at::Tensor values = relative_values(engine, order, leaves[4], leaves[5], leaves[6], s.head_sliced);
  at::manual_seed(7);  // fixed random probes: every output entry's gradient distinct
  const at::Tensor probe_l = at::randn(logits.sizes(), at::kDouble).to(logits.scalar_type());
  const at::Tensor probe_v = at::randn(values.sizes(), at::kDouble).to(values.scalar_type());
  ((logits * probe_l).sum() + (values * probe_v).sum()).backward();
  std::vector<at::Tensor> out{logits.detach(), values.detach()};
  for (const at::Tensor& t : leaves)
    if (t.defined()) out.push_back(t.grad());
  return out;
}

std::vector<at::Tensor> random_inputs(const PairOrder& order, const Shape& s, int64_t B) {
  const int64_t N = order.tokens, M = order.queries, C = s.channels, D = s.heads * s.width;
  const int64_t E = int64_t(order.entry_offset.size()) - 1;
  at::manual_seed(11);
  const auto f = at::TensorOptions().dtype(at::kFloat);
  return {s.plain_query ? at::randn({B, M, D}, f) : at::randn({B, M, C}, f),
          s.plain_query ? at::Tensor() : at::randn({E, C, D}, f) * 0.3,
          s.plain_key ? at::randn({B, N, D}, f) : at::randn({B, N, C}, f),
          s.plain_key ? at::Tensor() : at::randn({E, C, D}, f) * 0.3,
          at::softmax(at::randn({B, s.heads, M, N}, f), -1),
          at::randn({B, N, C}, f),
          at::randn({E, C, D}, f) * 0.3};
}

// The lanes in float under `engine` against the ATen expressions in double on the
// same values (the reference options with the same other settings).
void check(const EngineOptions& engine, const PairOrder& order, const Shape& s, int64_t B,
           int64_t lanes_calls = 4) {
  const KernelCounts kernels;  // the kernels this check enters
  const std::vector<at::Tensor> inputs = random_inputs(order, s, B);
  std::vector<at::Tensor> exact_inputs;
  for (const at::Tensor& t : inputs) exact_inputs.push_back(t.defined() ? t.to(at::kDouble) : t);
  const std::vector<at::Tensor> reference =
      run(test_support::reference_options(engine), order, exact_inputs, s);
  const int64_t calls = kernels[Kernel::PairLanes];
  const std::vector<at::Tensor> lanes = run(engine, order, inputs, s);
  EXPECT_EQ(kernels[Kernel::PairLanes] - calls, lanes_calls)
      << "operators' forwards and backwards on the lanes";
  ASSERT_EQ(lanes.size(), reference.size());
  for (size_t i = 0; i < lanes.size(); ++i)
    EXPECT_LT(max_relative_error(lanes[i], reference[i]), 2e-5)
        << describe(s) << ", output " << i << " (0, 1: logits, values; then the inputs' gradients in order)";
}

class PairLanes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has_avx512()) GTEST_SKIP() << "the lanes run on AVX-512 only; this CPU has none";
  }
};

const std::vector<Shape> kShapes = {
    {3, 8, 24, false},               // LoR ViT-A: 3 heads of 8, 24 x 24 matrices
    {3, 8, 24, false, true},         // a plain key side
    {3, 8, 24, false, false, true},  // a plain query side
    {2, 16, 8, true},                // 8 -> 32, values sliced per head
    {1, 8, 32, false},               // 32 -> 8
    {4, 4, 16, true},                // heads of 4
};

TEST_F(PairLanes, FloatMatchesExactReference) {
  const RelativeTable table = make_relative_table(TokenLayout::grid(3, 4, true));
  for (const int64_t queries : {table.tokens(), int64_t(1)}) {
    const PairOrder order = make_pair_order(table, queries);
    for (const int threads : {1, 3}) {
      const EngineOptions engine = test_support::threads_options(threads);
      for (const Shape& s : kShapes)
        for (const int64_t batch : {int64_t(16), int64_t(32)}) {
          SCOPED_TRACE(std::to_string(queries) + " queries, " + std::to_string(threads) +
                       " thread(s), batch " + std::to_string(batch));
          check(engine, order, s, batch);
        }
    }
  }
}

// Rows recomputed in backward (nothing kept from forward) give the same results.
TEST_F(PairLanes, RecomputedRowsStayExact) {
  check(with(EngineOptions{}, &EngineOptions::recompute_pair_rows, true),
        make_pair_order(make_relative_table(TokenLayout::grid(2, 3, true))), kShapes[0], 16);
}

// Causal sequences leave pairs without a row: 0 in the logits and their gradients.
TEST_F(PairLanes, CausalSequenceMatches) {
  const RelativeTable table = make_relative_table(TokenLayout::sequence(6, true));
  for (const Shape& s : kShapes) check(EngineOptions{}, make_pair_order(table), s, 16);
}

// Where the lanes do not fit (a batch not a multiple of 16, double, rows wider
// than 32 or not a multiple of 8, more than 32 heads), the blocked path runs: no lanes call.
TEST_F(PairLanes, OtherShapesTakeTheBlockedPath) {
  const KernelCounts kernels;  // the kernels this test enters
  const RelativeTable table = make_relative_table(TokenLayout::grid(2, 2, true));
  const PairOrder order = make_pair_order(table);
  const int64_t calls = kernels[Kernel::PairLanes];
  auto logits = [&](const Shape& s, int64_t B, at::ScalarType type) {
    const std::vector<at::Tensor> in = random_inputs(order, s, B);
    relative_logits(EngineOptions{}, order, in[0].to(type), in[1].to(type), in[2].to(type), in[3].to(type),
                    s.heads);
  };
  logits(kShapes[0], 8, at::kFloat);
  logits(kShapes[0], 16, at::kDouble);
  logits({3, 16, 24, false}, 16, at::kFloat);
  logits({3, 4, 24, false}, 16, at::kFloat);
  logits({3, 8, 12, false}, 16, at::kFloat);
  auto values = [&](int64_t heads, int64_t B) {  // every head weighs all 8 of v: 8 x 8 matrices
    const int64_t N = order.tokens, E = int64_t(order.entry_offset.size()) - 1;
    relative_values(EngineOptions{}, order, at::softmax(at::randn({B, heads, order.queries, N}), -1),
                    at::randn({B, N, 8}), at::randn({E, 8, 8}), false);
  };
  values(3, 8);
  values(40, 16);
  EXPECT_EQ(kernels[Kernel::PairLanes], calls);
  logits(kShapes[0], 16, at::kFloat);
  values(3, 16);
  EXPECT_EQ(kernels[Kernel::PairLanes], calls + 2);
}

}  // namespace
}  // namespace translution
