#include "infer/inference_batches.h"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>

namespace translution {

int64_t images_per_forward(const ViT& model, const c10::Device& device, int64_t batch) {
  if (!device.is_cpu()) return std::max<int64_t>(batch, 1);
  int64_t bank_weights = 0;
  for (int64_t b = 0; b < model->config().depth; ++b)
    for (const at::Tensor& bank : model->block(b).attention().relative_banks()) bank_weights += bank.numel();
  return 2 * bank_weights > model->parameter_count() ? 1 : std::max<int64_t>(batch, 1);
}

at::Tensor logits_without_gradients(const EngineOptions& engine, ViT model, const at::Tensor& images,
                                    const c10::Device& device) {
  at::NoGradGuard no_grad;
  const int64_t B = images.size(0), per_forward = images_per_forward(model, device, B);
  std::vector<at::Tensor> logits;
  for (int64_t first = 0; first < B; first += per_forward)
    logits.push_back(
        model->forward(engine, images.narrow(0, first, std::min(per_forward, B - first)).to(device))
            .to(at::kCPU));
  return logits.size() == 1 ? logits.front() : at::cat(logits);
}

}  // namespace translution
