// FusedAdamW must be LibTorch's AdamW, only faster: same updates, same state.
#include "cpu/fused_adamw.h"

#include <sstream>

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "cpu/helper_threads.h"
#include "test_switches.h"
#include "train/release_gradients.h"

namespace translution {
namespace {

// A few parameters of different shapes; the last never gets a gradient.
std::vector<at::Tensor> make_parameters(at::ScalarType dtype, c10::Device device = c10::kCPU) {
  at::manual_seed(7);
  std::vector<at::Tensor> params;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{3, 5}, {70000}, {2, 3, 4}, {4}})
    params.push_back(at::randn(shape, at::TensorOptions().dtype(dtype)).to(device).requires_grad_(true));
  return params;
}

std::vector<at::Tensor> clone_parameters(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// The same pseudo-random gradients for step `step` in both runs.
void set_gradients(std::vector<at::Tensor>& params, int step) {
  at::manual_seed(100 + step);
  for (size_t i = 0; i + 1 < params.size(); ++i)
    params[i].mutable_grad() = at::randn_like(params[i]) * (1 + step);
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

double max_relative_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor d = (a[i] - b[i]).abs() / b[i].abs().clamp_min(1e-3);
    worst = std::max(worst, d.max().item<double>());
  }
  return worst;
}

// The fused optimizer's pass splits as `engine` says.
double run_both(at::ScalarType dtype, int steps, const EngineOptions& engine = {}) {
  std::vector<at::Tensor> fused_params = make_parameters(dtype),
                          plain_params = clone_parameters(fused_params);
  const auto options = torch::optim::AdamWOptions(3e-2).weight_decay(0.05);
  FusedAdamW fused(fused_params, options, engine);
  torch::optim::AdamW plain(plain_params, options);
  for (int s = 0; s < steps; ++s) {
    set_lr(fused, 3e-2 / (1 + s));  // a schedule changes lr between steps
    set_lr(plain, 3e-2 / (1 + s));
    set_gradients(fused_params, s);
    set_gradients(plain_params, s);
    fused.step();
    plain.step();
  }
  EXPECT_FALSE(fused_params[0].detach().equal(make_parameters(dtype)[0].detach())) << "the step did nothing";
  EXPECT_TRUE(fused_params.back().detach().equal(plain_params.back().detach()));  // no gradient: untouched
  return max_relative_difference(fused_params, plain_params);
}

TEST(FusedAdamW, MatchesLibTorchsAdamWInDouble) {
  EXPECT_LT(run_both(at::kDouble, 6), 1e-12);
  // The pass split in three uneven parts.
  EXPECT_LT(run_both(at::kDouble, 6, test_support::threads_options(3)), 1e-12);
}

// A training run's optimizer is the fused one, LibTorch's own under the reference options.
TEST(FusedAdamW, TheReferenceOptionsMakeLibTorchsAdamW) {
  const auto options = torch::optim::AdamWOptions(1e-2);
  const auto fused = make_adamw(EngineOptions{}, make_parameters(at::kFloat), options);
  const auto plain = make_adamw(test_support::reference_options(), make_parameters(at::kFloat), options);
  EXPECT_NE(dynamic_cast<FusedAdamW*>(fused.get()), nullptr);
  EXPECT_EQ(dynamic_cast<FusedAdamW*>(plain.get()), nullptr);
}

// The multi-tensor path against LibTorch's AdamW over `steps` steps: forced on the
// CPU, and as step() takes it for parameters on a GPU. The last parameter gets its
// first gradient halfway, so a group holds two step counts from then on.
double run_multi_tensor(at::ScalarType dtype, int steps, c10::Device device = c10::kCPU) {
  std::vector<at::Tensor> fast_params = make_parameters(dtype, device),
                          plain_params = clone_parameters(fast_params);
  const auto options = torch::optim::AdamWOptions(3e-3).weight_decay(0.05);
  FusedAdamW fast(fast_params, options);
  torch::optim::AdamW plain(plain_params, options);
  for (int s = 0; s < steps; ++s) {
    set_lr(fast, 3e-3 / (1 + 0.01 * s));
    set_lr(plain, 3e-3 / (1 + 0.01 * s));
    set_gradients(fast_params, s);
    set_gradients(plain_params, s);
    if (s >= steps / 2) {
      fast_params.back().mutable_grad() = at::full_like(fast_params.back(), 0.5 + s);
      plain_params.back().mutable_grad() = at::full_like(plain_params.back(), 0.5 + s);
    }
    if (device.is_cpu())
      fast.multi_tensor_step();
    else
      fast.step();
    plain.step();
  }
  EXPECT_FALSE(fast_params.back().detach().equal(make_parameters(dtype, device).back().detach()))
      << "never stepped";
  return max_relative_difference(fast_params, plain_params);
}

TEST(FusedAdamW, MultiTensorStepMatchesLibTorchsAdamW) {
  EXPECT_LT(run_multi_tensor(at::kFloat, 100), 1e-6);
  EXPECT_LT(run_multi_tensor(at::kDouble, 100), 1e-12);
}

TEST(FusedAdamW, MultiTensorStepOnCudaMatchesLibTorchsAdamW) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_LT(run_multi_tensor(at::kFloat, 100, c10::Device(c10::kCUDA, 0)), 1e-6);
  EXPECT_LT(run_multi_tensor(at::kDouble, 100, c10::Device(c10::kCUDA, 0)), 1e-12);
}

TEST(FusedAdamW, MatchesLibTorchsAdamWInFloatToRounding) { EXPECT_LT(run_both(at::kFloat, 6), 1e-5); }

TEST(FusedAdamW, StateIsInterchangeableWithLibTorchsAdamW) {
  std::vector<at::Tensor> a = make_parameters(at::kDouble), b = clone_parameters(a);
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.05);
  FusedAdamW fused(a, options);
  torch::optim::AdamW plain(b, options);
  for (int s = 0; s < 3; ++s) {
    set_gradients(a, s);
    set_gradients(b, s);
    fused.step();
    plain.step();
  }
  // Swap: the fused optimizer's state continues in LibTorch's AdamW and vice versa.
  auto roundtrip = [](torch::optim::Optimizer& from, torch::optim::Optimizer& to) {
    torch::serialize::OutputArchive out;
    from.save(out);
    std::ostringstream bytes;
    out.save_to(bytes);
    std::istringstream in(bytes.str());
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    to.load(archive);
  };
  std::vector<at::Tensor> a2 = clone_parameters(a), b2 = clone_parameters(b);
  torch::optim::AdamW plain_from_fused(b2, options);
  FusedAdamW fused_from_plain(a2, options);
  roundtrip(fused, plain_from_fused);
  roundtrip(plain, fused_from_plain);
  for (int s = 3; s < 6; ++s) {
    set_gradients(b2, s);
    plain_from_fused.step();
    set_gradients(a2, s);
    fused_from_plain.step();
    set_gradients(a, s);
    fused.step();
  }
  EXPECT_LT(max_relative_difference(b2, a), 1e-12);
  EXPECT_LT(max_relative_difference(a2, a), 1e-12);
}

TEST(FusedAdamW, AmsgradFallsBackToLibTorchsStepExactly) {
  std::vector<at::Tensor> a = make_parameters(at::kFloat), b = clone_parameters(a);
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.05).amsgrad(true);
  FusedAdamW fused(a, options);
  torch::optim::AdamW plain(b, options);
  for (int s = 0; s < 3; ++s) {
    set_gradients(a, s);
    set_gradients(b, s);
    fused.step();
    plain.step();
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].detach().equal(b[i].detach()));
}

// Released gradients (PyTorch 2's zero_grad) train exactly like zeroed ones: each
// backward hands over a fresh gradient instead of adding into a zeroed buffer.
TEST(ReleaseGradients, TrainsExactlyLikeZeroedGradientsAndLeavesNoneBehind) {
  std::vector<at::Tensor> a = make_parameters(at::kDouble), b = clone_parameters(a);
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.05);
  FusedAdamW released(a, options), zeroed(b, options);
  auto backward = [](std::vector<at::Tensor>& params, int step) {  // the last parameter stays out of the loss
    at::Tensor loss = at::zeros({}, params[0].options());
    for (size_t i = 0; i + 1 < params.size(); ++i)
      loss = loss + (params[i] * params[i] * double(step + 1 + i)).sum();
    loss.backward();
  };
  for (int s = 0; s < 4; ++s) {
    release_gradients(released);
    for (const auto& p : a) EXPECT_FALSE(p.grad().defined());
    zeroed.zero_grad();
    backward(a, s);
    backward(b, s);
    released.step();
    zeroed.step();
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].detach().equal(b[i].detach())) << "parameter " << i;
  EXPECT_FALSE(a[0].detach().equal(make_parameters(at::kDouble)[0].detach())) << "the steps did nothing";
}

}  // namespace
}  // namespace translution
