#pragma once
// Data-parallel training: what a Trainer needs from a ProcessGroup.
//
// Every rank holds the same weights and takes the same steps. Each step's global
// batch (the config's --batch, drawn from the same epoch order on every rank) is cut
// into world-size contiguous shares; a rank runs forward and backward on its share
// alone. Its gradients, scaled by its share of the batch (images here / images in
// the batch), are summed over the ranks, so every rank ends with the gradient of the
// whole batch's mean loss: the one a single process computes at the same batch, up
// to the order of float sums. The optimizer then takes the same step everywhere.
// Learning rate and schedule therefore mean what they mean in one process: they
// belong to the global batch, whatever the number of ranks.
//
// Gradients travel in buckets of about kBucketBytes (fewer, larger messages than one
// per parameter; every bucket is started before the first is waited for). The
// reduction starts after backward: LibTorch 1.13's C++ API gives no hook when a
// leaf's gradient is complete, and a split batch (train/forward_backward.h)
// accumulates twice into one gradient.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dist/process_group.h"

namespace translution {

constexpr int64_t kBucketBytes = int64_t(25) << 20;

// The parameters each bucket holds: consecutive runs of one dtype and device, each
// run at most `bucket_bytes` unless one parameter alone is larger.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor>& parameters,
                                              int64_t bucket_bytes);

// The share [begin, end) of `batch` images that `rank` of `world_size` takes: contiguous,
// sizes differing by at most one, rank 0 first.
std::pair<int64_t, int64_t> batch_share(int64_t batch, int rank, int world_size);

class DataParallel {
 public:
  explicit DataParallel(std::shared_ptr<ProcessGroup> group, int64_t bucket_bytes = kBucketBytes);

  int rank() const { return group_->rank(); }
  int world_size() const { return group_->world_size(); }
  const ProcessGroup& group() const { return *group_; }

  // This rank's images of a global batch (its indices, in order).
  std::vector<int64_t> share(const std::vector<int64_t>& batch) const;

  // Every rank takes rank 0's values of `tensors` (parameters and buffers, same order
  // everywhere). Every rank built them from the same seed, so they should already be
  // equal: where a rank's differ, every rank throws an Error naming it.
  void start_from_rank0(const std::vector<at::Tensor>& tensors);

  // One step's figures, summed over the ranks.
  struct StepTotals {
    double loss_sum = 0;  // the sum of the images' losses
    double correct = 0;   // images classified right
    double images = 0;
  };
  StepTotals sum(const StepTotals& mine);

  // Whether any rank says yes (a stop asked for on one rank stops every rank at the same step).
  bool any(bool mine);

  // Each defined gradient times `weight`, summed over the ranks, in place; a parameter
  // without a gradient here counts as zero, and gets the sum where another rank had one.
  void average_gradients(const std::vector<at::Tensor>& parameters, double weight);

  // Rank 0's bytes on every rank (a checkpoint, say); the others pass anything.
  std::string broadcast_bytes(const std::string& bytes);

 private:
  std::shared_ptr<ProcessGroup> group_;
  int64_t bucket_bytes_;
  std::vector<std::vector<size_t>> buckets_;  // plan_buckets of the parameters last given
  size_t plan_size_ = 0;
};

}  // namespace translution
