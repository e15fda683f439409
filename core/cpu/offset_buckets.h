#pragma once
// The offset-batched layout of a pair order (nn/pair_order.h): its sorted rows
// grouped by bank entry (offset), and the entries put into a few buckets of
// similar pair counts. In a bucket every entry is padded to the bucket's largest
// count, so one batched product per bucket projects all of its pairs, across the
// batch: [E_b, n_b B, C] x [E_b, C, C'] ("batch as M"). Few buckets mean few
// launches; padding costs arithmetic, so the plan takes the fewest buckets whose
// padded rows stay within a bound of the real ones.
//
// Slots: the buckets' padded rows, one after another, entry by entry: slot
// first_slot + i n_b + t holds row offset[e] + t of the bucket's i-th entry e for
// t < n_e and padding after it.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

struct OffsetBucket {
  int64_t first_entry = 0;  // position of its first entry in entry_of_position
  int64_t entries = 0;      // E_b
  int64_t rows_each = 0;    // n_b: the largest pair count among its entries
  int64_t first_slot = 0;   // its first slot
  int64_t slots() const { return entries * rows_each; }
};

struct OffsetBuckets {
  std::vector<OffsetBucket> buckets;
  int64_t rows = 0;              // R: the order's real rows
  int64_t slots = 0;             // P: padded rows, sum of the buckets' slots
  at::Tensor entry_of_position;  // int64 [sum E_b]: the bank entry at each bucket position
  at::Tensor row_of_slot;        // int64 [P]: the sorted row a slot holds; padding: row 0
  at::Tensor slot_of_row;        // int64 [R]: the slot of each sorted row
  double padding() const { return rows > 0 ? double(slots) / double(rows) : 1.0; }
  OffsetBuckets to(const c10::Device& device) const;
};

// The default bound on padded rows over real ones.
constexpr double kMaxOffsetPadding = 1.25;

// The plan for an order's entry offsets (E + 1 prefix sums): entries without rows
// are left out; the fewest buckets whose padding is at most max_padding, and among
// plans with that many, the least padding.
OffsetBuckets plan_offset_buckets(const std::vector<int64_t>& entry_offset,
                                  double max_padding = kMaxOffsetPadding);

// The plan for these offsets on `device`, made on first use and kept: the plan
// depends on the order's entry offsets alone, so each pair order has one per
// device. Index tensors made once are what a step without host copies, and a CUDA
// graph, need (a copy from the host on every call would wait on the GPU's stream).
// The cache is never destroyed, so no device tensor outlives the CUDA runtime at exit.
const OffsetBuckets& offset_buckets(const std::vector<int64_t>& entry_offset, const c10::Device& device);

// Plans offset_buckets() has made so far, in this process (each a cache miss).
int64_t offset_bucket_plans_made();

// The padding of one bucket holding every entry with rows (the largest count for all).
double single_bucket_padding(const std::vector<int64_t>& entry_offset);

}  // namespace translution
