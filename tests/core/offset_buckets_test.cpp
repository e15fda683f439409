// The offset-batched layout: every row in one slot, the fewest buckets within the
// padding bound, and one plan per order and device.
#include "cpu/offset_buckets.h"

#include <set>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "nn/pair_order.h"
#include "nn/token_layout.h"

namespace translution {
namespace {

std::vector<int64_t> offsets_of_counts(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offset{0};
  for (int64_t n : counts) offset.push_back(offset.back() + n);
  return offset;
}

std::vector<int64_t> values(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// Every real row sits in exactly one slot of its own entry's run; padding is the rest.
void expect_consistent(const OffsetBuckets& plan, const std::vector<int64_t>& offset) {
  const std::vector<int64_t> row_of_slot = values(plan.row_of_slot), slot_of_row = values(plan.slot_of_row),
                             entries = values(plan.entry_of_position);
  ASSERT_EQ(int64_t(slot_of_row.size()), offset.back());
  ASSERT_EQ(int64_t(row_of_slot.size()), plan.slots);
  std::set<int64_t> used;
  for (int64_t r = 0; r < offset.back(); ++r) {
    EXPECT_EQ(row_of_slot[size_t(slot_of_row[size_t(r)])], r);
    used.insert(slot_of_row[size_t(r)]);
  }
  EXPECT_EQ(int64_t(used.size()), offset.back()) << "two rows share a slot";
  int64_t slots = 0, position = 0;
  for (const OffsetBucket& k : plan.buckets) {
    EXPECT_EQ(k.first_slot, slots);
    EXPECT_EQ(k.first_entry, position);
    for (int64_t i = 0; i < k.entries; ++i) {
      const size_t e = size_t(entries[size_t(k.first_entry + i)]);
      const int64_t n = offset[e + 1] - offset[e];
      EXPECT_GT(n, 0) << "an entry without rows";
      EXPECT_LE(n, k.rows_each);
      for (int64_t t = 0; t < n; ++t)  // the entry's rows, in order, at the start of its run
        EXPECT_EQ(slot_of_row[size_t(offset[e] + t)], k.first_slot + i * k.rows_each + t);
    }
    slots += k.slots();
    position += k.entries;
  }
  EXPECT_EQ(slots, plan.slots);
  EXPECT_EQ(position, int64_t(entries.size()));
}

// Counts 8 8 7 4 4 1 (32 rows, at most 40 padded): one bucket pads to 48; of the
// two-bucket plans only {8 8 7}{4 4 1} fits (36; {8 8}{7 4 4 1} is 44, {8 8 7 4 4}{1} 41).
TEST(OffsetBuckets, TakesTheFewestBucketsWithinTheBound) {
  const std::vector<int64_t> offset = offsets_of_counts({4, 8, 0, 1, 7, 8, 4});  // entry 2 has no pairs
  const OffsetBuckets plan = plan_offset_buckets(offset);
  ASSERT_EQ(plan.buckets.size(), size_t(2));
  EXPECT_EQ(plan.buckets[0].entries, 3);
  EXPECT_EQ(plan.buckets[0].rows_each, 8);
  EXPECT_EQ(plan.buckets[1].entries, 3);
  EXPECT_EQ(plan.buckets[1].rows_each, 4);
  EXPECT_EQ(plan.slots, 36);
  EXPECT_EQ(values(plan.entry_of_position), (std::vector<int64_t>{1, 5, 4, 0, 6, 3}));
  EXPECT_DOUBLE_EQ(single_bucket_padding(offset), 48.0 / 32.0);
  expect_consistent(plan, offset);
  // No padding allowed: one bucket per distinct count. Any allowed: one bucket.
  EXPECT_EQ(plan_offset_buckets(offset, 1.0).buckets.size(), size_t(4));
  EXPECT_EQ(plan_offset_buckets(offset, 1.0).slots, 32);
  EXPECT_EQ(plan_offset_buckets(offset, 2.0).buckets.size(), size_t(1));
}

// The orders of a ViT's blocks: every token's and the CLS query's, on a grid and a causal sequence.
TEST(OffsetBuckets, PlansOfRealOrdersStayWithinTheBound) {
  for (const TokenLayout& layout :
       {TokenLayout::grid(7, 7, true), TokenLayout::grid(3, 5, true), TokenLayout::sequence(9, true, true)}) {
    const RelativeTable table = make_relative_table(layout);
    for (const int64_t queries : {int64_t(-1), int64_t(1)}) {
      const PairOrder order = make_pair_order(table, queries);
      const OffsetBuckets plan = plan_offset_buckets(order.entry_offset);
      SCOPED_TRACE(std::to_string(layout.tokens()) + " tokens, " + std::to_string(plan.buckets.size()) +
                   " buckets, padding " + std::to_string(plan.padding()));
      EXPECT_LE(plan.padding(), kMaxOffsetPadding);
      EXPECT_LE(plan.padding(), single_bucket_padding(order.entry_offset));
      expect_consistent(plan, order.entry_offset);
    }
  }
}

TEST(OffsetBuckets, OnePlanPerOrderAndDevice) {
  const std::vector<int64_t> offset = offsets_of_counts({3, 1, 2, 5, 5, 2, 9});
  const int64_t before = offset_bucket_plans_made();
  const OffsetBuckets& first = offset_buckets(offset, c10::Device(c10::kCPU));
  const OffsetBuckets& again = offset_buckets(offset, c10::Device(c10::kCPU));
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(offset_bucket_plans_made(), before + 1);
  expect_consistent(first, offset);
}

}  // namespace
}  // namespace translution
