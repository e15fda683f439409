#include "train/batch_split.h"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "nn/bf16_gemm.h"
#include "util/helper_threads.h"

namespace translution {
namespace {

// Sum of the share's cross-entropies over the batch's size: the shares' losses add up to the batch's mean.
at::Tensor share_loss(const at::Tensor& logits, const at::Tensor& labels, int64_t batch) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)) / double(batch);
}

}  // namespace

ForwardBackward forward_backward(ViT& model, const at::Tensor& images, const at::Tensor& labels, int shares,
                                 const std::function<void()>& after_forward) {
  const int64_t batch = images.size(0);
  shares = int(std::max<int64_t>(1, std::min<int64_t>(shares, batch)));
  if (shares == 1 || !images.device().is_cpu()) {
    const at::Tensor logits = model->forward(images);
    const at::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
    if (after_forward) after_forward();
    loss.backward();
    return {logits.detach(), loss.item<double>()};
  }
  std::vector<at::Tensor> logits(static_cast<size_t>(shares)), losses(static_cast<size_t>(shares));
  const DensePrecision precision = dense_precision();  // per thread: the shares run as the caller asked
  run_parts(shares, [&](int s) {
    const ScopedOneCore one_core;
    const ScopedDensePrecision share_precision(precision);
    const int64_t begin = batch * s / shares, end = batch * (s + 1) / shares;
    const at::Tensor share_logits = model->forward(images.slice(0, begin, end));
    const at::Tensor loss = share_loss(share_logits, labels.slice(0, begin, end), batch);
    if (s == 0 && after_forward) after_forward();
    loss.backward();
    logits[size_t(s)] = share_logits.detach();
    losses[size_t(s)] = loss.detach();
  });
  double loss = 0;
  for (const at::Tensor& l : losses) loss += l.item<double>();
  return {at::cat(logits), loss};
}

}  // namespace translution
