// The same models on CUDA must agree with the CPU: every operator family through the
// ViT (forward, every gradient, the inspection's attention maps and offset-weight
// magnitudes), and a training run with its checkpoint. Skipped (and saying so) where
// LibTorch has no CUDA or no GPU is visible; the operators alone are checked on the
// GPU against the per-pair reference in attention_exactness_test.cpp.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "cpu/pair_projection.h"
#include "nn/attention_spec.h"
#include "nn/relative_projection.h"
#include "nn/vit.h"
#include "temp_dir.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "util/device.h"

using namespace translution;
using test_support::max_relative_error;

namespace {

#define SKIP_WITHOUT_CUDA() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: this LibTorch is CPU-only or no GPU is visible"

const c10::Device kGpu(c10::kCUDA, 0);

ViTConfig small_vit(const std::string& model) {
  ViTConfig c = preset_config("tiny", model);
  c.image_height = c.image_width = 28;
  c.patch = 7;
  c.depth = 2;
  return c;
}

// A double-precision model on the CPU and an identical copy on the GPU.
std::pair<ViT, ViT> twin_models(const ViTConfig& c) {
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
  gpu_model->to(kGpu);
  return {cpu_model, gpu_model};
}

void expect_same_on_cuda(const std::string& model) {
  SCOPED_TRACE(model);
  auto [cpu_model, gpu_model] = twin_models(small_vit(model));
  const at::Tensor x = at::randn({3, 1, 28, 28}, at::kDouble);
  // The last block for the CLS query alone (the default) and for every token.
  for (const bool cls_only : {true, false}) {
    SCOPED_TRACE(cls_only ? "last block: CLS query only" : "last block: every token");
    const EngineOptions engine = with(EngineOptions{}, &EngineOptions::cls_only_last_block, cls_only);
    const at::Tensor out_cpu = cpu_model->forward(engine, x);
    const at::Tensor out_gpu = gpu_model->forward(engine, x.to(kGpu));
    ASSERT_TRUE(out_gpu.is_cuda());
    EXPECT_LT(max_relative_error(out_gpu.cpu(), out_cpu), 1e-9) << "forward";
    {
      at::NoGradGuard no_grad;  // prediction's path
      EXPECT_LT(max_relative_error(gpu_model->forward(engine, x.to(kGpu)).cpu(), out_cpu.detach()), 1e-9)
          << "forward without gradients";
    }
    const auto pc = cpu_model->parameters(), pg = gpu_model->parameters();
    const auto gc = torch::autograd::grad({out_cpu.sum()}, pc),
               gg = torch::autograd::grad({out_gpu.sum()}, pg);
    const auto names = cpu_model->named_parameters();
    for (size_t i = 0; i < gc.size(); ++i)
      EXPECT_LT(max_relative_error(gg[i].cpu(), gc[i]), 1e-9) << "gradient of " << names[i].key();
  }
}

}  // namespace

TEST(Cuda, TranslutionMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  expect_same_on_cuda("translution");
}
TEST(Cuda, LoRTranslutionMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  expect_same_on_cuda("lor");
}
// Every other operator the CLI names: each Q/K/V subset, the absolute pair
// encodings of Table 5 and the baselines.
TEST(Cuda, EveryOtherOperatorMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  for (const auto& choice : attention_choices())
    if (choice.name != "translution" && choice.name != "lor") expect_same_on_cuda(choice.name);
}

// What the studio draws comes from the GPU as it would from the CPU.
TEST(Cuda, InspectionMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  for (const std::string model : {"translution", "lor", "attention"}) {
    SCOPED_TRACE(model);
    auto [cpu_model, gpu_model] = twin_models(small_vit(model));
    at::NoGradGuard no_grad;
    const at::Tensor x = at::randn({2, 1, 28, 28}, at::kDouble);
    ViTInspection on_cpu, on_gpu;
    const EngineOptions engine;
    const at::Tensor out_cpu = cpu_model->forward(engine, x, &on_cpu),
                     out_gpu = gpu_model->forward(engine, x.to(kGpu), &on_gpu);
    EXPECT_LT(max_relative_error(out_gpu.cpu(), out_cpu), 1e-9);
    ASSERT_EQ(on_gpu.attention.size(), on_cpu.attention.size());
    for (size_t l = 0; l < on_cpu.attention.size(); ++l)
      EXPECT_LT(max_relative_error(on_gpu.attention[l].cpu(), on_cpu.attention[l]), 1e-9) << "layer " << l;
    const auto m_cpu = cpu_model->offset_magnitudes(), m_gpu = gpu_model->offset_magnitudes();
    ASSERT_EQ(m_gpu.size(), m_cpu.size());
    EXPECT_EQ(m_cpu.empty() || m_cpu[0].empty(), model == "attention");
    for (size_t l = 0; l < m_cpu.size(); ++l) {
      ASSERT_EQ(m_gpu[l].size(), m_cpu[l].size());
      for (size_t p = 0; p < m_cpu[l].size(); ++p)
        EXPECT_LT(max_relative_error(m_gpu[l][p].norms.cpu(), m_cpu[l][p].norms), 1e-6)
            << "layer " << l << " " << m_cpu[l][p].projection;
    }
  }
}

// A run on the GPU follows the same path as on the CPU (same initial weights, same
// batches; float rounding apart), and its checkpoint loads on the CPU and predicts
// the same there.
TEST(Cuda, TrainingRunMatchesCpuAndItsCheckpointLoadsOnCpu) {
  SKIP_WITHOUT_CUDA();
  ASSERT_FALSE(test_support::mnist_dir().empty()) << "TRANSLUTION_DATA is not set";
  for (const std::string model : {"translution", "lor", "attention"}) {
    SCOPED_TRACE(model);
    ViTConfig c = small_vit(model);
    c.depth = 1;
    TrainConfig t;
    t.dataset = "dynamic";
    t.train_samples = 64;
    t.batch = 16;
    t.steps = 6;
    t.lr = 1e-3;
    t.eval_every = 3;
    t.eval_samples = 64;
    t.seed = 5;
    const EngineOptions engine;
    Trainer on_cpu(engine, c, t, test_support::mnist_dir(), c10::kCPU),
        on_gpu(engine, c, t, test_support::mnist_dir(), kGpu);
    EXPECT_EQ(on_cpu.run([](const TrainProgress&) {}), TrainProgress::Event::Finished);
    EXPECT_EQ(on_gpu.run([](const TrainProgress&) {}), TrainProgress::Event::Finished);
    // All weights as one vector: AdamW's first steps move a weight whose gradient is
    // near zero by the learning rate either way, so a rounding-level difference of such
    // a gradient may move a few weights apart; the whole must stay together.
    std::vector<at::Tensor> wc, wg;
    for (const auto& p : on_cpu.model()->named_parameters()) {
      ASSERT_TRUE(on_gpu.model()->named_parameters()[p.key()].is_cuda()) << p.key();
      wc.push_back(p.value().detach().flatten());
      wg.push_back(on_gpu.model()->named_parameters()[p.key()].detach().cpu().flatten());
    }
    const at::Tensor a = at::cat(wg), b = at::cat(wc);
    EXPECT_LT(((a - b).norm() / b.norm()).item<double>(), 1e-4);
    ASSERT_EQ(on_gpu.history().size(), on_cpu.history().size());
    for (size_t i = 0; i < on_cpu.history().size(); ++i)
      EXPECT_NEAR(on_gpu.history()[i].loss, on_cpu.history()[i].loss, 1e-3) << "point " << i;

    test_support::TempDir dir;
    save_checkpoint(dir.file("gpu.ckpt"), on_gpu.checkpoint());
    Checkpoint loaded = load_checkpoint(dir.file("gpu.ckpt"));  // onto the CPU
    ASSERT_TRUE(loaded.model->parameters()[0].is_cpu());
    ViT trained = on_gpu.model();
    at::NoGradGuard no_grad;
    const at::Tensor x = at::randn({4, 1, 28, 28});
    EXPECT_LT(
        max_relative_error(loaded.model->forward(engine, x), trained->forward(engine, x.to(kGpu)).cpu()),
        1e-5);
  }
}

// On a GPU auto projects every token while the [N, B, E, D] intermediate is at most
// 64 MiB, offset-batched beyond: ViT-A/12 at 84x84 has 50 tokens and 172 matrices per bank.
TEST(Cuda, AutoChoosesByTheAllTokenIntermediate) {
  SKIP_WITHOUT_CUDA();
  const auto on_gpu = at::TensorOptions().device(kGpu);
  const at::Tensor translution = at::empty({172, 192, 192}, on_gpu), lor = at::empty({172, 24, 24}, on_gpu);
  const EngineOptions engine;                                                             // projection Auto
  EXPECT_EQ(projection_for(engine, translution, 50, 1), ProjectionAlgorithm::AllTokens);  // 6.6e6 bytes
  EXPECT_EQ(projection_for(engine, translution, 50, 32), ProjectionAlgorithm::OffsetBatched);
  EXPECT_EQ(projection_for(engine, lor, 50, 32), ProjectionAlgorithm::AllTokens);
  EXPECT_EQ(projection_for(engine, lor, 50, 256), ProjectionAlgorithm::OffsetBatched);
  EXPECT_EQ(
      projection_for(with(engine, &EngineOptions::projection, ProjectionAlgorithm::PerMatrix), lor, 50, 1),
      ProjectionAlgorithm::PerMatrix);
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
