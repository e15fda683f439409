// Attention rollout and mean attention distance against their definitions,
// computed here by explicit loops in double precision.
#include "infer/attention_inspection.h"

#include <cmath>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "util/error.h"

namespace translution {
namespace {

// Random row-stochastic attention: [heads, n, n].
at::Tensor random_attention(int64_t heads, int64_t n, int seed) {
  at::manual_seed(seed);
  return at::randn({heads, n, n}, at::kFloat).mul(2).softmax(2);
}

TEST(AttentionRollout, IsTheProductOfHeadAveragedLayersWithTheResidual) {
  const int64_t n = 5;
  std::vector<at::Tensor> layers = {random_attention(3, n, 1), random_attention(3, n, 2),
                                    random_attention(3, n, 3)};
  // R = A'_3 A'_2 A'_1 with A'_l[i][j] = (mean_h A_l[h][i][j] + [i == j]) / 2, by explicit sums.
  std::vector<std::vector<double>> r(n, std::vector<double>(n, 0));
  for (int64_t i = 0; i < n; ++i) r[i][i] = 1;
  for (const at::Tensor& layer : layers) {
    std::vector<std::vector<double>> next(n, std::vector<double>(n, 0));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t k = 0; k < n; ++k) {
          double mean = 0;
          for (int64_t h = 0; h < 3; ++h) mean += layer[h][i][k].item<double>() / 3;
          next[i][j] += (mean + (i == k ? 1 : 0)) / 2 * r[k][j];
        }
    r = next;
  }
  const at::Tensor rollout = attention_rollout(layers);
  ASSERT_EQ(rollout.sizes(), (at::IntArrayRef{n, n}));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(rollout[i].sum().item<double>(), 1.0, 1e-6);  // rows stay distributions (float inputs)
    for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(rollout[i][j].item<double>(), r[i][j], 1e-6);
  }
}

TEST(AttentionRollout, OneLayerOfIdentityAttentionIsTheIdentity) {
  const at::Tensor eye = at::eye(4, at::kFloat).unsqueeze(0).repeat({2, 1, 1});
  EXPECT_TRUE(at::allclose(attention_rollout({eye, eye}), at::eye(4, at::kDouble)));
  EXPECT_THROW(attention_rollout({}), Error);
  EXPECT_THROW(attention_rollout({eye, at::ones({2, 5, 5})}), Error);
}

TEST(MeanAttentionDistance, WeighsEuclideanPatchDistancesByAttentionOverImageTokens) {
  const int64_t gh = 3, gw = 4, n = 1 + gh * gw;
  const at::Tensor a = random_attention(2, n, 7);
  const at::Tensor got = mean_attention_distance(a, gh, gw);
  for (int64_t h = 0; h < 2; ++h) {
    double total = 0;
    for (int64_t i = 1; i < n; ++i) {
      double mass = 0, weighted = 0;
      for (int64_t j = 1; j < n; ++j) {
        const double w = a[h][i][j].item<double>();
        const double dy = double((i - 1) / gw - (j - 1) / gw), dx = double((i - 1) % gw - (j - 1) % gw);
        mass += w;
        weighted += w * std::sqrt(dx * dx + dy * dy);
      }
      total += weighted / mass;
    }
    EXPECT_NEAR(got[h].item<double>(), total / (n - 1), 1e-6);
  }
}

TEST(MeanAttentionDistance, IsZeroForSelfAttentionAndOneForTheRightNeighbour) {
  const int64_t gh = 2, gw = 3, n = 1 + gh * gw;
  at::Tensor self = at::zeros({1, n, n});
  at::Tensor right = at::zeros({1, n, n});
  for (int64_t i = 1; i < n; ++i) {
    self[0][i][i] = 1;
    const int64_t col = (i - 1) % gw;
    right[0][i][col + 1 < gw ? i + 1 : i - 1] = 0.5;  // a neighbour one patch away...
    right[0][i][0] = 0.5;                             // ...and CLS, which does not count
  }
  EXPECT_NEAR(mean_attention_distance(self, gh, gw)[0].item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(mean_attention_distance(right, gh, gw)[0].item<double>(), 1.0, 1e-12);
  EXPECT_THROW(mean_attention_distance(self, 3, 3), Error);
}

}  // namespace
}  // namespace translution
