#include "data/batches.h"

#include <numeric>
#include <random>

#include <ATen/ATen.h>

namespace translution {

std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  // mt19937_64 and this Fisher-Yates are fully specified, so the order is the
  // same on every platform (std::shuffle's algorithm is not).
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + uint64_t(epoch) + 1);
  for (int64_t i = count - 1; i > 0; --i) {
    const int64_t j = int64_t(rng() % uint64_t(i + 1));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

Batch make_batch(CanvasDataset& dataset, const std::vector<int64_t>& indices, const c10::Device& device) {
  std::vector<at::Tensor> images, labels;
  images.reserve(indices.size());
  labels.reserve(indices.size());
  for (const int64_t i : indices) {
    auto example = dataset.get(size_t(i));
    images.push_back(example.data);
    labels.push_back(example.target);
  }
  return {at::stack(images).to(device), at::stack(labels).to(device)};
}

Batch make_range_batch(CanvasDataset& dataset, int64_t begin, int64_t end, const c10::Device& device) {
  std::vector<int64_t> indices(size_t(end - begin));
  std::iota(indices.begin(), indices.end(), begin);
  return make_batch(dataset, indices, device);
}

}  // namespace translution
