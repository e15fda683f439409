// The relative operators' pair arithmetic inside each matrix's block of rows
// (cpu/pair_blocks.h) against the separate passes and the ATen expressions, in
// float, where it runs its AVX-512 helpers on a CPU that has them: head widths
// with 256-bit tails (LoR's 8 and 24), whole 512-bit chunks, and odd tails done
// value by value; both sides relative, or one plain; every query or the first
// few; batches of one and three; matrices split over parts. The double-precision proof against the
// paper's equations is attention_exactness_test.cpp.
#include "cpu/pair_blocks.h"

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/bf16_gemm.h"
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
  int64_t heads, width;      // per-head slice of a row
  bool head_sliced;          // values: head h weighs its own slice (Translution) or all of v (LoR)
  bool plain_key;            // logits: the key side plain vectors, not projected
  bool plain_query = false;  // ... or the query side
};

std::string describe(const Shape& s) {
  return std::to_string(s.heads) + " heads of " + std::to_string(s.width) +
         (s.head_sliced ? ", sliced" : "") + (s.plain_key ? ", plain keys" : "") +
         (s.plain_query ? ", plain queries" : "");
}

// Forward outputs and every input's gradient of both operators under `engine`.
std::vector<at::Tensor> run(const EngineOptions& engine, const PairOrder& order,
                            const std::vector<at::Tensor>& inputs, const Shape& s) {
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& t : inputs)
    leaves.push_back(t.defined() ? t.detach().clone().requires_grad_(true) : t);
  const at::Tensor &xq = leaves[0], &wq = leaves[1], &xk = leaves[2], &wk = leaves[3];
  const at::Tensor &alpha = leaves[4], &xv = leaves[5], &wv = leaves[6];
  const at::Tensor logits = relative_logits(engine, order, xq, wq, xk, wk, s.heads);
  const at::Tensor values = relative_values(engine, order, alpha, xv, wv, s.head_sliced);
  // Probes of fixed random weights make every output entry's gradient distinct.
  at::manual_seed(7);
  const at::Tensor loss = (logits * at::randn_like(logits)).sum() + (values * at::randn_like(values)).sum();
  loss.backward();
  std::vector<at::Tensor> out{logits.detach(), values.detach()};
  for (const at::Tensor& t : leaves)
    if (t.defined()) out.push_back(t.grad());
  return out;
}

// The engine's kernels under `engine` against the ATen expressions (its reference options).
void compare(const EngineOptions& engine, const PairOrder& order, const Shape& s, at::ScalarType type,
             double tolerance, int64_t B = 3) {
  const KernelCounts kernels;  // the kernels this comparison enters
  const int64_t N = order.tokens, M = order.queries, C = 7, D = s.heads * s.width;
  const int64_t E = int64_t(order.entry_offset.size()) - 1;
  at::manual_seed(11);
  const auto options = at::TensorOptions().dtype(type);
  std::vector<at::Tensor> inputs{
      s.plain_query ? at::randn({B, M, D}, options)
                    : at::randn({B, M, C}, options),                                // xq (the queries' rows)
      s.plain_query ? at::Tensor() : at::randn({E, C, D}, options),                 // wq
      s.plain_key ? at::randn({B, N, D}, options) : at::randn({B, N, C}, options),  // xk
      s.plain_key ? at::Tensor() : at::randn({E, C, D}, options),                   // wk
      at::softmax(at::randn({B, s.heads, M, N}, options), -1),                      // alpha
      at::randn({B, N, C}, options),                                                // xv
      at::randn({E, C, D}, options)};                                               // wv
  const std::vector<at::Tensor> reference = run(test_support::reference_options(engine), order, inputs, s);
  const int64_t calls = kernels[Kernel::PairBlocks];
  const std::vector<at::Tensor> tested = run(engine, order, inputs, s);
  // Both operators forward and backward inside the blocks (no batch here fills the vector lanes).
  EXPECT_EQ(kernels[Kernel::PairBlocks] - calls, 4) << describe(s);
  ASSERT_EQ(tested.size(), reference.size());
  for (size_t i = 0; i < tested.size(); ++i)
    EXPECT_LT(max_relative_error(tested[i], reference[i]), tolerance)
        << describe(s) << ", output " << i << " (0, 1: logits, values; then the inputs' gradients in order)";
}

class PairBlocks : public ::testing::Test {};

const std::vector<Shape> kShapes = {
    {3, 8, false, false},   // LoR ViT-A: logits' slices of 8; every head weighs all 24 of v
    {3, 8, false, true},    // LoR with a plain key side
    {3, 64, true, false},   // Translution ViT-A: whole 512-bit chunks
    {2, 24, true, true},    // a 16 + 8 slice
    {2, 5, true, false},    // tails value by value
    {1, 20, false, false},  // 16 + 4
    {2, 9, false, true},    // values 16 + 2
    {4, 13, true, true},   {3, 8, false, false, true},  // a plain query side
};

TEST_F(PairBlocks, FloatMatchesAtenExpressions) {
  SCOPED_TRACE(cpu_has_avx512() ? "AVX-512 helpers" : "portable loops (no AVX-512 on this CPU)");
  const RelativeTable table = make_relative_table(TokenLayout::grid(3, 4, true));
  for (const int64_t queries : {table.tokens(), int64_t(1), int64_t(5)}) {
    const PairOrder order = make_pair_order(table, queries);
    for (const int threads : {1, 3}) {
      const EngineOptions engine = test_support::threads_options(threads);
      for (const Shape& s : kShapes)
        for (const int64_t batch : {int64_t(1), int64_t(3)}) {
          SCOPED_TRACE(std::to_string(queries) + " queries, " + std::to_string(threads) +
                       " thread(s), batch " + std::to_string(batch));
          compare(engine, order, s, at::kFloat, 2e-5, batch);
        }
    }
  }
}

// In bf16 precision (training), banks of at least 64 x 64 multiply in bfloat16 (cpu/bf16_gemm)
// (cpu/bf16_gemm.h), inside the blocks: rounded products, within bfloat16's
// accuracy of the fp32 ones.
TEST_F(PairBlocks, Bf16PrecisionRoundsTheBlockProducts) {
  const KernelCounts kernels;  // the kernels this test enters
  SKIP_WITHOUT_BF16_PRODUCTS();
  const RelativeTable table = make_relative_table(TokenLayout::grid(3, 4, true));
  const PairOrder order = make_pair_order(table);
  const int64_t B = 2, N = table.tokens(), C = 64, H = 2, E = table.entries;
  at::manual_seed(5);
  std::vector<at::Tensor> inputs{at::randn({B, N, C}),
                                 at::randn({E, C, C}) * 0.1,
                                 at::randn({B, N, C}),
                                 at::randn({E, C, C}) * 0.1,
                                 at::softmax(at::randn({B, H, N, N}), -1),
                                 at::randn({B, N, C}),
                                 at::randn({E, C, C}) * 0.1};
  const Shape s{H, C / H, true, false};
  const EngineOptions fp32_options;
  const std::vector<at::Tensor> fp32 = run(fp32_options, order, inputs, s);
  const EngineOptions bf16 = with(fp32_options, &EngineOptions::precision, DensePrecision::Bf16);
  const int64_t calls = kernels[Kernel::PairBlocks];
  const std::vector<at::Tensor> blocked = run(bf16, order, inputs, s);
  EXPECT_EQ(kernels[Kernel::PairBlocks] - calls, 4);
  for (size_t i = 0; i < blocked.size(); ++i)
    EXPECT_LT(max_relative_error(blocked[i], fp32[i]), 5e-2) << "output " << i;
  EXPECT_GT(max_relative_error(blocked[0], fp32[0]), 1e-4) << "the products were rounded to bfloat16";
}

// Causal sequences leave pairs without a row: their logits and alpha gradients are 0.
TEST_F(PairBlocks, CausalSequenceInDoubleMatchesAtenExpressions) {
  const RelativeTable table = make_relative_table(TokenLayout::sequence(6, true));
  const PairOrder order = make_pair_order(table);
  for (const Shape& s : kShapes) compare(EngineOptions{}, order, s, at::kDouble, 1e-12);
}

}  // namespace
}  // namespace translution
