#include "train/forward_backward.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "cpu/helper_threads.h"

namespace translution {

std::vector<int64_t> batch_share_sizes(int64_t batch, int shares) {
  const int64_t count = std::max<int64_t>(1, std::min<int64_t>(shares, batch));
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < count; ++s) sizes.push_back(batch * (s + 1) / count - batch * s / count);
  return sizes;
}

ForwardBackward forward_backward(const EngineOptions& engine, ViT& model, const at::Tensor& images,
                                 const at::Tensor& labels, int shares,
                                 const std::function<void()>& after_forward) {
  namespace F = torch::nn::functional;
  const int64_t batch = images.size(0);
  shares = images.device().is_cpu() ? int(batch_share_sizes(batch, shares).size()) : 1;
  std::vector<at::Tensor> logits(static_cast<size_t>(shares));
  std::vector<double> losses(static_cast<size_t>(shares));
  std::vector<std::thread::id> ran_on(static_cast<size_t>(shares));  // each share writes its own entry
  // Each share of a split batch already keeps one core busy: its own products stay on that core.
  const EngineOptions one_core = with(engine, &EngineOptions::matrix_threads, 1);
  // One share: its images' forward, the sum of their cross-entropies over the whole batch's size (the
  // shares' losses add up to the batch's mean), and backward unless that loss is not finite.
  auto run_share = [&](int s, const EngineOptions& options) {
    const int64_t begin = batch * s / shares, end = batch * (s + 1) / shares;
    const at::Tensor share_logits = model->forward(options, images.slice(0, begin, end));
    const at::Tensor loss = F::cross_entropy(share_logits, labels.slice(0, begin, end),
                                             F::CrossEntropyFuncOptions().reduction(torch::kSum)) /
                            double(batch);
    if (s == 0 && after_forward) after_forward();
    losses[size_t(s)] = loss.item<double>();
    if (std::isfinite(losses[size_t(s)])) loss.backward();  // a diverged step leaves no NaN gradients behind
    logits[size_t(s)] = share_logits.detach();
    ran_on[size_t(s)] = std::this_thread::get_id();
  };
  if (shares == 1) {
    run_share(0, engine);
  } else {
    run_parts(shares, [&](int s) { run_share(s, one_core); });
  }
  std::sort(ran_on.begin(), ran_on.end());
  const int threads = int(std::unique(ran_on.begin(), ran_on.end()) - ran_on.begin());
  double loss = 0;
  for (const double l : losses) loss += l;
  return {shares == 1 ? logits[0] : at::cat(logits), loss, threads};
}

}  // namespace translution
