// What each offset's value matrix carries for one input, against its definition
// written as loops over pairs in double precision: for every bank entry e,
//   sum over pairs (i, j) with e_ij = e, over heads h, of alpha^h_ij |x_j W_v[e]_h|,
// with W_v[e] = Wv[e] (Translution) or W1v Wv[e] W2v (LoR's relative term).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include "nn/attention.h"
#include "nn/attention_spec.h"
#include "nn/token_layout.h"
#include "nn/vit.h"

namespace translution {
namespace {

at::Tensor parameter(const AttentionModule& m, const std::string& name) {
  return m.named_parameters()[name].detach();
}

// The reference: the effective matrix of each pair formed on its own, its head slices' norms summed with
// alpha.
at::Tensor reference(const AttentionModule& m, const std::string& model, const RelativeTable& t,
                     const at::Tensor& x, const at::Tensor& alpha) {
  const int64_t N = x.size(0), H = alpha.size(0);
  at::Tensor out = at::zeros({t.entries}, at::kDouble);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const int64_t e = t.entry[i][j].item<int64_t>();
      at::Tensor w = parameter(m, "wv").select(0, e);
      if (model == "lor") w = parameter(m, "v_down.weight").t().matmul(w).matmul(parameter(m, "v_up"));
      const at::Tensor v = x[j].matmul(w);  // [C']
      const int64_t dh = v.size(0) / H;
      for (int64_t h = 0; h < H; ++h)
        out[e] += alpha[h][i][j].item<double>() * v.narrow(0, h * dh, dh).norm().item<double>();
    }
  return out;
}

class ValueContributions : public ::testing::TestWithParam<std::string> {};

TEST_P(ValueContributions, AreAttentionWeightedNormsOfEachOffsetsValues) {
  const std::string model = GetParam();
  const TokenLayout layout = TokenLayout::grid(3, 3, true);
  const AttentionShape shape{6, 2, 4};
  at::manual_seed(3);
  auto module = make_attention(attention_choice(model).spec, shape, layout);
  module->to(at::kDouble);
  const at::Tensor x = at::randn({1, layout.tokens(), shape.dim}, at::kDouble);
  at::Tensor alpha;
  module->forward(EngineOptions{}, x, &alpha);
  const at::Tensor got = module->value_contributions(x[0], alpha[0]);
  const RelativeTable table = make_relative_table(layout);
  ASSERT_EQ(got.numel(), table.entries);
  const at::Tensor want = reference(*module, model, table, x[0], alpha[0]);
  EXPECT_TRUE(at::allclose(got.to(at::kDouble), want, 1e-5, 1e-6)) << got << want;
  // Every pair counts once: the sum over entries is the sum over all pairs.
  EXPECT_GT(want.sum().item<double>(), 0);
}

INSTANTIATE_TEST_SUITE_P(RelativeValues, ValueContributions,
                         ::testing::Values("translution", "lor", "translution-v"));

TEST(ValueContributionsOfAViT, OnePerLayerForRelativeValuesAndNoneForSelfAttention) {
  for (const std::string model : {"translution", "translution-qk", "attention"}) {
    ViTConfig c = preset_config("tiny", model);
    c.depth = 2;
    c.dim = 16;
    c.heads = 2;
    c.head_dim = 8;
    c.mlp_dim = 16;
    ViT vit(c);
    vit->eval();
    ViTInspection inspection;
    at::NoGradGuard no_grad;
    vit->forward(EngineOptions{}, at::rand({1, 1, 84, 84}), &inspection);
    ASSERT_EQ(inspection.inputs.size(), 2u);
    const auto layers = vit->value_contributions(inspection);
    ASSERT_EQ(layers.size(), 2u) << model;
    const bool relative_values = model == "translution";
    for (const auto& layer : layers) {
      ASSERT_EQ(layer.size(), relative_values ? 1u : 0u) << model;
      if (relative_values) {
        EXPECT_EQ(layer[0].norms.numel(), 13 * 13 + 3);
      }
    }
  }
}

}  // namespace
}  // namespace translution
