// The operator count of a training step: what the offset-batched products launch,
// and that the count sees the work of each algorithm; and of the studio's forward.
#include "perf/operator_counts.h"

#include <gtest/gtest.h>

#include "cpu/offset_buckets.h"
#include "nn/pair_order.h"
#include "nn/token_layout.h"
#include "nn/vit_config.h"
#include "test_switches.h"

namespace translution {
namespace {

// One block of the tests' small Translution ViT (a 4 x 3 grid and CLS).
ViTConfig small_translution() {
  ViTConfig c = test_support::small_vit_config("translution");
  c.depth = 1;
  return c;
}

EngineOptions projected(ProjectionAlgorithm algorithm) {
  return with(EngineOptions{}, &EngineOptions::projection, algorithm);
}

int64_t count_of(const OperatorCounts& c, const std::string& name) {
  const auto found = c.by_operator.find(name);
  return found == c.by_operator.end() ? 0 : found->second;
}

// Translution's three relative projections: one batched product per bucket forward,
// two backward (the matrices' and the inputs' gradients), and no host synchronisation.
TEST(OperatorCounts, OffsetBatchedBlocksRunOneProductPerBucketAndProjection) {
  const ViTConfig config = small_translution();
  const TrainingOperatorCounts counts =
      count_training_operators(projected(ProjectionAlgorithm::OffsetBatched), config, 2);
  const PairOrder order =
      make_pair_order(make_relative_table(config.token_layout(), config.attention_spec(0).encoding));
  const int64_t buckets = int64_t(plan_offset_buckets(order.entry_offset).buckets.size());
  ASSERT_GT(buckets, 1);
  EXPECT_EQ(count_of(counts.block, "aten::bmm"), 9 * buckets);
  EXPECT_EQ(count_of(counts.block, "aten::mm"), 9);  // output projection and MLP: 3 forward, 6 backward
  // Nothing a CUDA graph could not hold: no value read on the host, no shape that
  // depends on values, no index plan made once warm.
  EXPECT_EQ(counts.step.host_syncs, 0);
  EXPECT_EQ(counts.step.data_dependent, 0);
  EXPECT_EQ(counts.step.index_plans_made, 0);
  EXPECT_GT(counts.block.forward, 0);
  EXPECT_GT(counts.block.backward, counts.block.forward);
  // The update over every parameter at once (train/capturable_adamw.h): twelve
  // multi-tensor operators, however deep the model.
  int64_t multi_tensor = 0;
  for (const auto& [name, n] : counts.step.by_operator)
    if (name.rfind("aten::_foreach_", 0) == 0) multi_tensor += n;
  EXPECT_EQ(multi_tensor, 12);
  EXPECT_EQ(counts.block.optimizer, 0);
}

// Per matrix: a product per offset matrix and projection, forward, and two backward.
TEST(OperatorCounts, PerMatrixBlocksRunOneProductPerMatrix) {
  const ViTConfig config = small_translution();
  const TrainingOperatorCounts per_matrix =
      count_training_operators(projected(ProjectionAlgorithm::PerMatrix), config, 2);
  const TrainingOperatorCounts batched =
      count_training_operators(projected(ProjectionAlgorithm::OffsetBatched), config, 2);
  const PairOrder order =
      make_pair_order(make_relative_table(config.token_layout(), config.attention_spec(0).encoding));
  int64_t used = 0;
  for (size_t e = 0; e + 1 < order.entry_offset.size(); ++e)
    used += order.entry_offset[e + 1] > order.entry_offset[e];
  EXPECT_EQ(count_of(per_matrix.block, "aten::mm"), 9 * used + 9);
  // Per matrix the products alone outnumber the whole offset-batched block.
  EXPECT_GT(count_of(per_matrix.block, "aten::mm"), batched.block.total());
}

// The studio's forward of one image, all tokens projected as a GPU does it: per projection one
// batched product over the bank as it lies (no product on a reordered copy of it), one gather,
// and its index in one operator.
TEST(OperatorCounts, OneImagesAllTokenForwardIsABatchedProductAndAGatherPerProjection) {
  const ViTConfig config = small_translution();
  const OperatorCounts c =
      count_inference_operators(projected(ProjectionAlgorithm::AllTokens), config, 1, true);
  EXPECT_EQ(count_of(c, "aten::bmm"), 3);
  EXPECT_EQ(count_of(c, "aten::index_select"), 3);
  EXPECT_EQ(count_of(c, "aten::arange"), 0);
  EXPECT_EQ(c.backward + c.optimizer, 0);
  EXPECT_EQ(c.host_syncs, 0);
  EXPECT_EQ(c.index_plans_made, 0);
  // At batch 2 the index adds the images: two operators more per projection (an arange, a sum).
  const OperatorCounts two =
      count_inference_operators(projected(ProjectionAlgorithm::AllTokens), config, 2, true);
  EXPECT_EQ(count_of(two, "aten::arange"), 3);
}

}  // namespace
}  // namespace translution
