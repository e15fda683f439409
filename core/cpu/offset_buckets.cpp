#include "cpu/offset_buckets.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "util/built_once.h"

namespace translution {
namespace {

// Entries with rows, by pair count descending (ties by entry), in runs of equal count.
struct CountRuns {
  std::vector<int64_t> entries;  // sorted as above
  std::vector<int64_t> count;    // per run: its pair count
  std::vector<int64_t> first;    // per run, and one past the last: its first position in entries
};

CountRuns count_runs(const std::vector<int64_t>& offset) {
  CountRuns runs;
  for (size_t e = 0; e + 1 < offset.size(); ++e)
    if (offset[e + 1] > offset[e]) runs.entries.push_back(int64_t(e));
  const auto rows_of = [&](int64_t e) { return offset[size_t(e) + 1] - offset[size_t(e)]; };
  std::stable_sort(runs.entries.begin(), runs.entries.end(),
                   [&](int64_t a, int64_t b) { return rows_of(a) > rows_of(b); });
  for (size_t p = 0; p < runs.entries.size(); ++p) {
    if (p > 0 && rows_of(runs.entries[p]) == runs.count.back()) continue;
    runs.count.push_back(rows_of(runs.entries[p]));
    runs.first.push_back(int64_t(p));
  }
  runs.first.push_back(int64_t(runs.entries.size()));
  return runs;
}

// The fewest buckets (runs [cut[b], cut[b+1]) each) whose padded rows are at most
// `bound`, the least padded among those: dynamic programming over the runs, one
// more bucket a round. Padded rows of runs [i, j): count[i] (first[j] - first[i]).
std::vector<size_t> bucket_cuts(const CountRuns& runs, double bound) {
  const size_t G = runs.count.size();
  const auto padded = [&](size_t i, size_t j) { return runs.count[i] * (runs.first[j] - runs.first[i]); };
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> best(G + 1, kNone);  // best[j]: runs [0, j) in this round's number of buckets
  for (size_t j = 1; j <= G; ++j) best[j] = padded(0, j);
  std::vector<std::vector<size_t>> from{std::vector<size_t>(G + 1, 0)};  // per round: the last cut
  while (double(best[G]) > bound && from.size() < G) {
    std::vector<int64_t> next(G + 1, kNone);
    std::vector<size_t> cut(G + 1, 0);
    for (size_t j = from.size() + 1; j <= G; ++j)
      for (size_t i = from.size(); i < j; ++i)
        if (best[i] != kNone && best[i] + padded(i, j) < next[j]) {
          next[j] = best[i] + padded(i, j);
          cut[j] = i;
        }
    best = std::move(next);
    from.push_back(std::move(cut));
  }
  std::vector<size_t> cuts{G};
  for (size_t round = from.size(); round-- > 0;) cuts.push_back(from[round][cuts.back()]);
  std::reverse(cuts.begin(), cuts.end());
  return cuts;  // 0, ..., G
}

at::Tensor long_tensor(const std::vector<int64_t>& values) { return at::tensor(values, at::kLong); }

}  // namespace

OffsetBuckets OffsetBuckets::to(const c10::Device& device) const {
  OffsetBuckets o = *this;
  o.entry_of_position = entry_of_position.to(device);
  o.row_of_slot = row_of_slot.to(device);
  o.slot_of_row = slot_of_row.to(device);
  return o;
}

OffsetBuckets plan_offset_buckets(const std::vector<int64_t>& offset, double max_padding) {
  OffsetBuckets plan;
  const CountRuns runs = count_runs(offset);
  plan.rows = offset.empty() ? 0 : offset.back();
  std::vector<int64_t> row_of_slot, slot_of_row(size_t(plan.rows), 0);
  if (!runs.entries.empty()) {
    const std::vector<size_t> cuts = bucket_cuts(runs, max_padding * double(plan.rows));
    for (size_t b = 0; b + 1 < cuts.size(); ++b) {
      OffsetBucket bucket;
      bucket.first_entry = runs.first[cuts[b]];
      bucket.entries = runs.first[cuts[b + 1]] - bucket.first_entry;
      bucket.rows_each = runs.count[cuts[b]];
      bucket.first_slot = int64_t(row_of_slot.size());
      for (int64_t i = 0; i < bucket.entries; ++i) {
        const size_t e = size_t(runs.entries[size_t(bucket.first_entry + i)]);
        for (int64_t t = 0; t < bucket.rows_each; ++t) {
          const int64_t row = offset[e] + t;
          if (row < offset[e + 1]) slot_of_row[size_t(row)] = int64_t(row_of_slot.size());
          row_of_slot.push_back(row < offset[e + 1] ? row : 0);
        }
      }
      plan.buckets.push_back(bucket);
    }
  }
  plan.slots = int64_t(row_of_slot.size());
  plan.entry_of_position = long_tensor(runs.entries);
  plan.row_of_slot = long_tensor(row_of_slot);
  plan.slot_of_row = long_tensor(slot_of_row);
  return plan;
}

namespace {
std::atomic<int64_t> plans_made{0};
}  // namespace

const OffsetBuckets& offset_buckets(const std::vector<int64_t>& offset, const c10::Device& device) {
  // Never destroyed: no device tensor outlives the CUDA runtime at exit.
  static auto* made = new BuiltOnce<std::pair<std::vector<int64_t>, c10::Device>, OffsetBuckets>();
  return made->get({offset, device}, [&] {
    ++plans_made;
    return plan_offset_buckets(offset).to(device);
  });
}

int64_t offset_bucket_plans_made() { return plans_made.load(); }

double single_bucket_padding(const std::vector<int64_t>& offset) {
  int64_t largest = 0, used = 0;
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    largest = std::max(largest, offset[e + 1] - offset[e]);
    used += offset[e + 1] > offset[e] ? 1 : 0;
  }
  return offset.empty() || offset.back() == 0 ? 1.0 : double(largest * used) / double(offset.back());
}

}  // namespace translution
