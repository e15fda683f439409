#include "dist/data_parallel.h"

#include <cstring>

#include <ATen/ATen.h>

#include "util/available_memory.h"
#include "util/error.h"

namespace translution {

std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor>& parameters,
                                              int64_t bucket_bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t filled = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const at::Tensor& p = parameters[i];
    const int64_t size = p.numel() * int64_t(p.element_size());
    const bool same_kind = !buckets.empty() &&
                           parameters[buckets.back().back()].scalar_type() == p.scalar_type() &&
                           parameters[buckets.back().back()].device() == p.device();
    if (!same_kind || filled + size > bucket_bytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(i);
    filled += size;
  }
  return buckets;
}

std::pair<int64_t, int64_t> batch_share(int64_t batch, int rank, int world_size) {
  return {batch * rank / world_size, batch * (rank + 1) / world_size};
}

DataParallel::DataParallel(std::shared_ptr<ProcessGroup> group, int64_t bucket_bytes)
    : group_(std::move(group)), bucket_bytes_(bucket_bytes) {}

std::vector<int64_t> DataParallel::share(const std::vector<int64_t>& batch) const {
  const auto [begin, end] = batch_share(int64_t(batch.size()), rank(), world_size());
  return {batch.begin() + begin, batch.begin() + end};
}

void DataParallel::start_from_rank0(const std::vector<at::Tensor>& tensors) {
  at::NoGradGuard no_grad;
  bool differs = false;
  for (const at::Tensor& t : tensors) {
    at::Tensor value = t.detach().clone().contiguous();
    group_->broadcast(value);
    if (!at::equal(value, t)) differs = true;
    t.detach().copy_(value);
  }
  // Which ranks built other weights: every rank learns it, so every rank stops together.
  at::Tensor flags = at::zeros({world_size()}, at::kDouble);
  flags[rank()] = differs ? 1.0 : 0.0;
  std::vector<at::Tensor> reduce{flags};
  group_->all_reduce_sum(reduce);
  std::string ranks;
  for (int r = 0; r < world_size(); ++r)
    if (flags[r].item<double>() > 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  if (!ranks.empty())
    throw Error("rank " + ranks +
                " built other initial weights than rank 0 from the same options: a run's ranks "
                "need the same program and LibTorch");
}

DataParallel::StepTotals DataParallel::sum(const StepTotals& mine) {
  std::vector<at::Tensor> t{at::tensor({mine.loss_sum, mine.correct, mine.images}, at::kDouble)};
  group_->all_reduce_sum(t);
  const double* v = t[0].data_ptr<double>();
  return {v[0], v[1], v[2]};
}

bool DataParallel::any(bool mine) {
  std::vector<at::Tensor> t{at::tensor({mine ? 1.0 : 0.0}, at::kDouble)};
  group_->all_reduce_sum(t);
  return t[0].item<double>() > 0;
}

void DataParallel::average_gradients(const std::vector<at::Tensor>& parameters, double weight) {
  if (parameters.empty()) return;
  at::NoGradGuard no_grad;
  if (plan_size_ != parameters.size()) {  // the same parameters every step: planned once
    buckets_ = plan_buckets(parameters, bucket_bytes_);
    plan_size_ = parameters.size();
  }
  const std::vector<std::vector<size_t>>& buckets = buckets_;
  std::vector<at::Tensor> flat;
  for (const std::vector<size_t>& bucket : buckets) {
    int64_t n = 0;
    for (size_t i : bucket) n += parameters[i].numel();
    at::Tensor b = at::empty({n}, parameters[bucket[0]].options());
    int64_t offset = 0;
    for (size_t i : bucket) {
      const at::Tensor& g = parameters[i].grad();
      at::Tensor slice = b.narrow(0, offset, parameters[i].numel());
      if (g.defined())
        at::mul_out(slice, g.reshape({-1}), weight);
      else
        slice.zero_();
      offset += parameters[i].numel();
    }
    flat.push_back(b);
  }
  // Which parameters have a gradient on any rank: one that has none anywhere stays without one,
  // as in one process (AdamW then leaves it alone, weight decay included).
  std::vector<float> defined;
  for (const at::Tensor& p : parameters) defined.push_back(p.grad().defined() ? 1.0f : 0.0f);
  flat.push_back(at::tensor(defined).to(parameters[0].device()));
  group_->all_reduce_sum(flat);
  const at::Tensor anywhere = flat.back().cpu();
  for (size_t k = 0; k < buckets.size(); ++k) {
    int64_t offset = 0;
    for (size_t i : buckets[k]) {
      at::Tensor p = parameters[i];
      const at::Tensor summed = flat[k].narrow(0, offset, p.numel()).view(p.sizes());
      offset += p.numel();
      if (anywhere[int64_t(i)].item<float>() == 0) continue;
      if (p.grad().defined())
        p.mutable_grad().copy_(summed);
      else
        p.mutable_grad() = summed.clone();
    }
  }
}

std::string DataParallel::broadcast_bytes(const std::string& bytes) {
  at::Tensor size = at::tensor({int64_t(bytes.size())}, at::kLong);
  group_->broadcast(size);
  // Rank 0's word, checked before it is allocated. (A rank that refuses leaves the others to
  // their timeout in the broadcast that follows.)
  const int64_t announced = size.item<int64_t>();
  if (announced < 0) throw Error("rank 0 announced " + std::to_string(announced) + " bytes to send");
  const AvailableMemory room = available_memory(c10::kCPU);
  if (room.bytes >= 0 && double(announced) > room.bytes)
    throw Error("rank 0 announced " + std::to_string(announced) + " bytes to send, and " +
                std::to_string(int64_t(room.bytes)) + " bytes are available (" + room.source + ")");
  at::Tensor data = at::empty({announced}, at::kByte);
  if (rank() == 0 && !bytes.empty()) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  if (data.numel() == 0) return {};
  group_->broadcast(data);
  return {static_cast<const char*>(data.data_ptr()), size_t(data.numel())};
}

}  // namespace translution
