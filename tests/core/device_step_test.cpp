// The device step: the same update as the host's step, a guard that leaves a bad
// step's state exactly as it was, and a warm step that reads nothing on the host.
#include "train/device_step.h"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include "perf/operator_counts.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "train/graphed_train_step.h"
#include "train/release_gradients.h"
#include "util/optimizer_state_key.h"

namespace translution {
namespace {

ViT small_vit(const std::string& name, const at::TensorOptions& options) {
  at::manual_seed(3);
  ViT model(test_support::small_vit_config(name));
  model->to(options.device(), options.dtype().toScalarType());
  model->train();
  return model;
}

ViT small_double_vit(const std::string& name) { return small_vit(name, at::kDouble); }

ViT copy_of(const ViT& model) {
  const at::Tensor first = model->parameters()[0];
  ViT copy = small_vit(model->config().model, first.options());
  torch::NoGradGuard no_grad;
  const auto from = model->named_parameters();
  for (auto& p : copy->named_parameters()) p.value().copy_(from[p.key()]);
  return copy;
}

struct Data {
  at::Tensor images, labels;
};

Data batch(const ViTConfig& c, int64_t step, const at::TensorOptions& options = at::kDouble) {
  at::manual_seed(100 + step);
  return {at::randn({3, c.channels, c.image_height, c.image_width}, at::kDouble).to(options),
          at::randint(c.classes, {3}, at::kLong).to(options.device())};
}

torch::optim::AdamWOptions adamw_options(double lr) {
  return torch::optim::AdamWOptions(lr).weight_decay(0.05);
}

// LibTorch's step as the host path takes it: loss, backward, clip_grad_norm_, AdamW.
double host_step(const EngineOptions& engine, ViT& model, torch::optim::AdamW& adamw, const Data& d,
                 double lr, double clip) {
  for (auto& group : adamw.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  release_gradients(adamw);
  const at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(engine, d.images), d.labels);
  loss.backward();
  if (clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), clip);
  adamw.step();
  return loss.item<double>();
}

// Several steps with a changing learning rate, one clipping hard and one not at all.
TEST(DeviceStep, StepsAsLibTorchsClipAndAdamWDo) {
  const EngineOptions engine =
      with(test_support::reference_options(), &EngineOptions::projection, ProjectionAlgorithm::OffsetBatched);
  for (const double clip : {0.0, 0.05}) {
    SCOPED_TRACE(clip);
    ViT device_model = small_double_vit("translution"), host_model = copy_of(device_model);
    torch::optim::AdamW device_adamw(device_model->parameters(), adamw_options(0));
    torch::optim::AdamW host_adamw(host_model->parameters(), adamw_options(0));
    DeviceStep step(engine, device_model, device_adamw, clip);
    for (int64_t s = 0; s < 4; ++s) {
      const Data d = batch(device_model->config(), s);
      const double lr = 1e-3 * double(s + 1);
      step.set_lr(lr);
      const StepReport r = step.finish(step.run(d.images, d.labels));
      EXPECT_TRUE(r.applied);
      EXPECT_NEAR(r.loss, host_step(engine, host_model, host_adamw, d, lr, clip), 1e-12);
      EXPECT_GT(r.grad_norm, 0);
    }
    const auto host = host_model->named_parameters();
    for (const auto& p : device_model->named_parameters())
      EXPECT_LT((p.value() - host[p.key()]).abs().max().item<double>(), 1e-12) << p.key();
  }
}

// A NaN in the batch: the report says so, and the weights, AdamW's moments and its step
// counts are exactly those before the step; the next good step is applied.
TEST(DeviceStep, ANonFiniteLossLeavesTheStateExactlyAsItWas) {
  ViT model = small_double_vit("lor");
  torch::optim::AdamW adamw(model->parameters(), adamw_options(1e-3));
  DeviceStep step(test_support::reference_options(), model, adamw, 1.0);
  Data d = batch(model->config(), 0);
  step.set_lr(1e-3);
  ASSERT_TRUE(step.finish(step.run(d.images, d.labels)).applied);
  std::vector<at::Tensor> before;
  auto& state = adamw.state();
  for (const at::Tensor& p : model->parameters()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(
        *state.at(optimizer_state_key<std::decay_t<decltype(state)>>(p)));
    EXPECT_EQ(s.step(), 1);
    for (const at::Tensor& t : {p, s.exp_avg(), s.exp_avg_sq()}) before.push_back(t.detach().clone());
  }
  d.images[1][0][5][5] = std::nan("");
  step.set_lr(1e-3);
  const StepReport bad = step.finish(step.run(d.images, d.labels));
  EXPECT_FALSE(bad.applied);
  EXPECT_TRUE(std::isnan(bad.loss));
  size_t i = 0;
  for (const at::Tensor& p : model->parameters()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(
        *state.at(optimizer_state_key<std::decay_t<decltype(state)>>(p)));
    EXPECT_EQ(s.step(), 1);
    for (const at::Tensor& t : {p, s.exp_avg(), s.exp_avg_sq()}) EXPECT_TRUE(at::equal(t, before[i++]));
  }
  d = batch(model->config(), 1);
  step.set_lr(1e-3);
  EXPECT_TRUE(step.finish(step.run(d.images, d.labels)).applied);
  EXPECT_FALSE(at::equal(model->parameters()[0], before[0]));
}

// What a CUDA graph cannot hold: a value read on the host, an output whose size depends
// on values, an index made anew. A warm step of each relative model has none of them.
TEST(DeviceStep, AWarmOffsetBatchedStepReadsNothingOnTheHost) {
  const EngineOptions engine =
      with(EngineOptions{}, &EngineOptions::projection, ProjectionAlgorithm::OffsetBatched);
  for (const std::string model : {"translution", "lor", "attention"}) {
    SCOPED_TRACE(model);
    ViTConfig c = test_support::small_vit_config(model);
    c.depth = 1;
    const OperatorCounts counts = count_training_operators(engine, c, 2).step;
    for (const char* name : {"aten::item", "aten::_local_scalar_dense", "aten::nonzero",
                             "aten::masked_select", "aten::unique", "aten::_unique", "aten::_unique2"})
      EXPECT_EQ(counts.seen.count(name), 0u) << name;
    EXPECT_EQ(counts.host_syncs, 0);
    EXPECT_EQ(counts.data_dependent, 0);
    EXPECT_EQ(counts.index_plans_made, 0);
    // The count watched the whole step: its guard, clip and update included.
    EXPECT_EQ(counts.seen.count("aten::isfinite"), 1u);
    EXPECT_EQ(counts.seen.count("aten::_foreach_addcmul_"), 1u);
  }
}

// A whole step replayed as a CUDA graph computes what the same step queued eagerly does,
// its guard included: a NaN batch through the graph changes nothing.
TEST(DeviceStep, GraphedStepsOnCudaMatchEagerSteps) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!cuda_graphs_supported()) GTEST_SKIP() << "this LibTorch cannot capture CUDA graphs (version 1)";
  const auto gpu = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  for (const ProjectionAlgorithm algorithm :
       {ProjectionAlgorithm::Auto, ProjectionAlgorithm::OffsetBatched}) {
    for (const std::string name : {"translution", "lor", "attention"}) {
      SCOPED_TRACE(name + " " + projection_algorithm_name(algorithm));
      const EngineOptions engine = with(EngineOptions{}, &EngineOptions::projection, algorithm);
      ViT eager_model = small_vit(name, gpu), graphed_model = copy_of(eager_model);
      torch::optim::AdamW eager_adamw(eager_model->parameters(), adamw_options(1e-3));
      torch::optim::AdamW graphed_adamw(graphed_model->parameters(), adamw_options(1e-3));
      DeviceStep eager(engine, eager_model, eager_adamw, 1.0),
          graphed(engine, graphed_model, graphed_adamw, 1.0);
      const Data first = batch(eager_model->config(), 0, gpu);
      GraphedTrainStep graph(graphed, first.images, first.labels);
      // The capture recorded the step's launches: forward, backward and AdamW are kernels.
      EXPECT_GT(graph.graph().kernels(), 10);
      EXPECT_GE(graph.graph().other_nodes(), 0);
      for (int64_t s = 0; s < 4; ++s) {
        Data d = batch(eager_model->config(), s, gpu);
        if (s == 2) d.images[0][0][3][3] = std::nan("");
        eager.set_lr(1e-3 * double(s + 1));
        graphed.set_lr(1e-3 * double(s + 1));
        const StepReport a = eager.finish(eager.run(d.images, d.labels));
        const StepReport b = graphed.finish(graph.run(d.images, d.labels));
        EXPECT_EQ(a.applied, s != 2);
        EXPECT_EQ(b.applied, s != 2);
        if (s != 2) {
          EXPECT_NEAR(a.loss, b.loss, 1e-4 * std::abs(a.loss));
        }
      }
      // Eager and replayed steps run on different streams, where cuBLAS may choose other
      // kernels and index_add's atomics sum in another order. AdamW divides each gradient
      // by its own running scale, so rounding in a near-zero gradient moves its weight
      // by a share of the learning rate: the weights agree to 1e-3, not to float rounding.
      const auto graphed_parameters = graphed_model->named_parameters();
      for (const auto& p : eager_model->named_parameters())
        EXPECT_LT(test_support::max_relative_error(graphed_parameters[p.key()], p.value()), 1e-3) << p.key();
    }
  }
}

}  // namespace
}  // namespace translution
