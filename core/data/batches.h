#pragma once
// Deterministic batches for training and evaluation. The order of epoch e is a
// pure function of (seed, e), so a run resumed at any step sees exactly the
// batches an uninterrupted run would have seen.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/canvas_dataset.h"

namespace translution {

struct Batch {
  at::Tensor images;  // float [B, 1, S, S], normalised
  at::Tensor labels;  // int64 [B]
};

// A permutation of [0, count) for epoch `epoch`.
std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch);

// Samples `indices` of `dataset`, stacked, on `device`.
Batch make_batch(CanvasDataset& dataset, const std::vector<int64_t>& indices, const c10::Device& device);

// Samples [begin, end) in order.
Batch make_range_batch(CanvasDataset& dataset, int64_t begin, int64_t end, const c10::Device& device);

}  // namespace translution
