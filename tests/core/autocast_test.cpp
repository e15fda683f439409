// Training under autocast to bfloat16 (precision bf16-autocast): the relative
// products really run in bf16, their gradients reach the fp32 weights, and a run
// learns as its fp32 run does.
#include <cstdio>
#include <optional>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "nn/pair_order.h"
#include "nn/relative_logits.h"
#include "nn/relative_values.h"
#include "temp_dir.h"
#include "test_switches.h"
#include "train/trainer.h"
#include "util/autocast_scope.h"

namespace translution {
namespace {

// The relative logits' and values' outputs, and every input's gradient, computed
// from fp32 inputs under `engine`, under autocast to bf16 or not.
std::vector<at::Tensor> relative_products(const EngineOptions& engine, bool autocast) {
  const ViTConfig c = test_support::small_vit_config("translution");
  const PairOrder order =
      make_pair_order(make_relative_table(c.token_layout(), c.attention_spec(0).encoding));
  const int64_t B = 2, N = order.tokens, C = 12, heads = 2, D = 2 * 16;
  const int64_t E = int64_t(order.entry_offset.size()) - 1;
  at::manual_seed(5);
  std::vector<at::Tensor> in{at::randn({B, N, C}),
                             at::randn({E, C, D}),
                             at::randn({B, N, C}),
                             at::randn({E, C, D}),
                             at::softmax(at::randn({B, heads, N, N}), -1),
                             at::randn({B, N, C}),
                             at::randn({E, C, D})};
  for (at::Tensor& t : in) t.requires_grad_(true);
  at::Tensor logits, values;
  {
    std::optional<AutocastScope> bf16;
    if (autocast) bf16.emplace(c10::DeviceType::CPU, at::kBFloat16);
    logits = relative_logits(engine, order, in[0], in[1], in[2], in[3], heads);
    values = relative_values(engine, order, in[4], in[5], in[6], true);
  }
  at::manual_seed(9);
  ((logits.to(at::kFloat) * at::randn(logits.sizes())).sum() +
   (values.to(at::kFloat) * at::randn(values.sizes())).sum())
      .backward();
  std::vector<at::Tensor> out{logits.detach(), values.detach()};
  for (const at::Tensor& t : in) out.push_back(t.grad());
  return out;
}

TEST(Autocast, RelativeProductsRunInBf16AndTheirGradientsReachFp32Weights) {
  for (const ProjectionAlgorithm algorithm :
       {ProjectionAlgorithm::OffsetBatched, ProjectionAlgorithm::PerMatrix}) {
    SCOPED_TRACE(projection_algorithm_name(algorithm));
    const EngineOptions engine =
        with(test_support::reference_options(), &EngineOptions::projection, algorithm);
    const std::vector<at::Tensor> bf16 = relative_products(engine, true),
                                  fp32 = relative_products(engine, false);
    EXPECT_EQ(bf16[0].scalar_type(), at::kBFloat16);
    EXPECT_EQ(bf16[1].scalar_type(), at::kBFloat16);
    EXPECT_EQ(fp32[0].scalar_type(), at::kFloat);
    for (size_t i = 0; i < bf16.size(); ++i) {
      SCOPED_TRACE(i);
      if (i >= 2) {
        EXPECT_EQ(bf16[i].scalar_type(), at::kFloat);  // gradients of fp32 leaves
      }
      // bf16 keeps 8 bits of mantissa: products of a few dozen terms agree to about 1%.
      const double scale = fp32[i].abs().max().item<double>();
      EXPECT_LT((bf16[i].to(at::kFloat) - fp32[i]).abs().max().item<double>(), 0.05 * scale);
      EXPECT_GT((bf16[i].to(at::kFloat) - fp32[i]).abs().max().item<double>(), 0) << "nothing ran in bf16";
    }
  }
}

// 300 steps of a small Translution ViT (two blocks of width 32) on centred MNIST digits,
// fp32 and bf16-autocast from the same seed, both on LibTorch's ops and the device step.
double held_out_accuracy(const std::string& precision) {
  ViTConfig c = preset_config("tiny", "translution");
  c.image_height = c.image_width = 28;
  c.patch = 7;
  c.depth = 2;
  c.dim = 32;
  c.heads = 2;
  c.head_dim = 16;
  c.mlp_dim = 64;
  TrainConfig t;
  t.dataset = "static";
  t.train_samples = 19200;
  t.batch = 64;
  t.steps = 300;
  t.warmup_steps = 20;
  t.lr = 3e-3;
  t.eval_samples = 1000;
  t.eval_every = 300;
  t.seed = 1;
  t.precision = precision;
  Trainer trainer(test_support::reference_options(), c, t, test_support::mnist_dir(), c10::kCPU);
  double accuracy = -1;
  EXPECT_EQ(trainer.run([&](const TrainProgress& p) {
    if (p.event == TrainProgress::Event::Evaluated) accuracy = p.test_accuracy;
  }),
            TrainProgress::Event::Finished);
  return accuracy;
}

TEST(Autocast, A300StepRunLearnsAsItsFp32RunDoes) {
  ASSERT_FALSE(test_support::mnist_dir().empty()) << "TRANSLUTION_DATA is not set";
  const double fp32 = held_out_accuracy("fp32"), bf16 = held_out_accuracy("bf16-autocast");
  std::printf("held-out accuracy after 300 steps: fp32 %.4f, bf16-autocast %.4f\n", fp32, bf16);
  EXPECT_GE(fp32, 0.70);
  EXPECT_GE(bf16, fp32 - 0.01);
}

}  // namespace
}  // namespace translution
