// Engine options are values owned by whoever runs a model: two models computing
// at once in one process under different options each compute what they compute
// alone, bit for bit (nothing in the engine keeps options of its own).
#include "util/engine_options.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>

#include "cpu/fused_adamw.h"
#include "nn/vit.h"
#include "test_switches.h"

namespace translution {
namespace {

// A few AdamW steps of a freshly seeded `config` on one batch, every forward,
// backward and optimizer step under `engine`. `start` (when given) is counted
// down before the first step and waited for to reach zero, so that runs on
// several threads start their steps together.
ViT train(const ViTConfig& config, const EngineOptions& engine, const at::Tensor& images,
          const at::Tensor& labels, std::atomic<int>* start = nullptr) {
  ViT vit = seeded_vit(config, 21);  // under the initialisation lock: the same weights on any thread
  const auto optimizer = make_adamw(engine, vit->parameters(), torch::optim::AdamWOptions(3e-3));
  if (start) {
    start->fetch_sub(1);
    while (start->load() > 0) std::this_thread::yield();
  }
  for (int step = 0; step < 4; ++step) {
    optimizer->zero_grad();
    torch::nn::functional::cross_entropy(vit->forward(engine, images), labels).backward();
    optimizer->step();
  }
  return vit;
}

bool same_weights(ViT a, ViT b) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& p : pa)
    if (!at::equal(p.value(), pb[p.key()])) return false;
  return true;
}

void expect_same_weights(ViT a, ViT b) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) EXPECT_TRUE(at::equal(p.value(), pb[p.key()])) << p.key();
}

// The same model and batch trained under two sets of options, first each alone,
// then both at once on two threads. One set splits the engine's work over two
// parts (the helper threads in use: each product, the per-pair kernels and the
// optimizer's pass); the other differs in ways that change the float results
// (the reference's LibTorch ops, or other projections and splits). The two alone
// differ, so a run that computed under the other's options would show; side by
// side each ends at the weights it reaches alone.
TEST(EngineOptions, TwoModelsWithDifferentOptionsSideBySideEachComputeAsAlone) {
  struct Case {
    std::string model;
    EngineOptions first, second;
  };
  const EngineOptions split = test_support::threads_options(2);
  const std::vector<Case> cases = {
      {"translution", with(split, &EngineOptions::projection, ProjectionAlgorithm::PerMatrix),
       test_support::reference_options()},
      {"lor", with(split, &EngineOptions::recompute_pair_rows, true),
       test_support::threads_options(
           3, with(with(EngineOptions{}, &EngineOptions::projection, ProjectionAlgorithm::AllTokens),
                   &EngineOptions::cls_only_last_block, false))},
  };
  at::manual_seed(4);
  const at::Tensor images = at::randn({8, 1, 28, 21}), labels = at::randint(10, {8}, at::kLong);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model);
    const ViTConfig config = test_support::small_vit_config(c.model);
    const ViT first_alone = train(config, c.first, images, labels);
    const ViT second_alone = train(config, c.second, images, labels);
    ASSERT_FALSE(same_weights(first_alone, second_alone))
        << "the two options give the same bits: the comparison could not tell them apart";
    ViT first_beside(nullptr), second_beside(nullptr);
    std::atomic<int> start{2};
    std::thread first([&] { first_beside = train(config, c.first, images, labels, &start); });
    std::thread second([&] { second_beside = train(config, c.second, images, labels, &start); });
    first.join();
    second.join();
    {
      SCOPED_TRACE("first options");
      expect_same_weights(first_beside, first_alone);
    }
    {
      SCOPED_TRACE("second options");
      expect_same_weights(second_beside, second_alone);
    }
  }
}

}  // namespace
}  // namespace translution
