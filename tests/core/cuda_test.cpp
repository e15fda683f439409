// The same operators on CUDA must agree with CPU. Skipped (and saying so) where
// LibTorch has no CUDA or no GPU is visible.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "nn/vit.h"
#include "util/device.h"

using namespace translution;

namespace {

void expect_same_on_cuda(const std::string& model) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: this LibTorch is CPU-only or no GPU is visible";
  ViTConfig c = preset_config("tiny", model);
  c.image_height = c.image_width = 28, c.patch = 7, c.depth = 2;
  at::manual_seed(3);
  ViT cpu_model(c);
  cpu_model->to(at::kDouble);
  ViT gpu_model(c);
  gpu_model->to(at::kDouble);
  {
    at::NoGradGuard no_grad;
    const auto src = cpu_model->parameters();
    auto dst = gpu_model->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  gpu_model->to(c10::Device(c10::kCUDA, 0));
  const at::Tensor x = at::randn({3, 1, 28, 28}, at::kDouble);
  // The last block for the CLS query alone (the default) and for every token.
  for (const bool cls_only : {true, false}) {
    SCOPED_TRACE(cls_only ? "last block: CLS query only" : "last block: every token");
    set_cls_only_last_block(cls_only);
    const at::Tensor out_cpu = cpu_model->forward(x);
    const at::Tensor out_gpu = gpu_model->forward(x.to(c10::kCUDA));
    EXPECT_TRUE(at::allclose(out_cpu, out_gpu.cpu(), 1e-9, 1e-9)) << model << " forward";
    const auto pc = cpu_model->parameters(), pg = gpu_model->parameters();
    const auto gc = torch::autograd::grad({out_cpu.sum()}, pc), gg = torch::autograd::grad({out_gpu.sum()}, pg);
    for (size_t i = 0; i < gc.size(); ++i)
      EXPECT_TRUE(at::allclose(gc[i], gg[i].cpu(), 1e-8, 1e-9)) << model << " gradient " << i;
  }
  set_cls_only_last_block(true);
}

}  // namespace

TEST(Cuda, TranslutionMatchesCpu) { expect_same_on_cuda("translution"); }
TEST(Cuda, LoRTranslutionMatchesCpu) { expect_same_on_cuda("lor"); }
TEST(Cuda, SelfAttentionAndBaselinesMatchCpu) {
  for (const char* m : {"attention", "rel-key", "rel-value", "rel-bias", "gpsa", "rope"}) expect_same_on_cuda(m);
}

TEST(Device, ParsesNamesAndExplainsMissingCuda) {
  EXPECT_TRUE(parse_device("cpu").is_cpu());
  EXPECT_EQ(parse_device("auto").is_cuda(), cuda_available());
  if (!cuda_available()) {
    try {
      parse_device("cuda");
      FAIL() << "cuda accepted without a GPU";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("device 'cuda' requested"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_device("tpu"), std::exception);
}
