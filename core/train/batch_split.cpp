#include "train/batch_split.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "nn/bf16_gemm.h"
#include "util/helper_threads.h"

namespace translution {

ForwardBackward forward_backward(ViT& model, const at::Tensor& images, const at::Tensor& labels, int shares,
                                 const std::function<void()>& after_forward) {
  namespace F = torch::nn::functional;
  const int64_t batch = images.size(0);
  shares = images.device().is_cpu() ? int(std::max<int64_t>(1, std::min<int64_t>(shares, batch))) : 1;
  std::vector<at::Tensor> logits(static_cast<size_t>(shares)), losses(static_cast<size_t>(shares));
  std::set<std::thread::id> threads;
  std::mutex threads_lock;
  const DensePrecision precision = dense_precision();  // per thread: the shares run as the caller asked
  // One share: its images' forward, the sum of their cross-entropies over the whole batch's size (the
  // shares' losses add up to the batch's mean), and backward unless that loss is not finite.
  auto run_share = [&](int s) {
    const ScopedDensePrecision share_precision(precision);
    const int64_t begin = batch * s / shares, end = batch * (s + 1) / shares;
    const at::Tensor share_logits = model->forward(images.slice(0, begin, end));
    const at::Tensor loss =
        F::cross_entropy(share_logits, labels.slice(0, begin, end), F::CrossEntropyFuncOptions().reduction(torch::kSum)) /
        double(batch);
    if (s == 0 && after_forward) after_forward();
    if (std::isfinite(loss.item<double>())) loss.backward();  // a diverged step leaves no NaN gradients behind
    logits[size_t(s)] = share_logits.detach();
    losses[size_t(s)] = loss.detach();
    const std::lock_guard<std::mutex> lock(threads_lock);
    threads.insert(std::this_thread::get_id());
  };
  if (shares == 1) {
    run_share(0);
  } else {
    run_parts(shares, [&](int s) {
      const ScopedOneCore one_core;
      run_share(s);
    });
  }
  double loss = 0;
  for (const at::Tensor& l : losses) loss += l.item<double>();
  return {shares == 1 ? logits[0] : at::cat(logits), loss, int(threads.size())};
}

}  // namespace translution
