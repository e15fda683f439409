#pragma once
// Translution (ICLR Eq. 1): for the chosen of q, k, v, every offset between the
// query and source token selects its own C x C' matrix:
//   q_ij = f_i Wq[d_ij]   k_ji = f_j Wk[-d_ij]   v_ij = f_j Wv[d_ij]
//   a_ij = q_ij . k_ji / sqrt(C')   alpha_i = softmax_j(a_i)   f'_i = sum_j alpha_ij v_ij
// The projections that are not relative are ordinary shared matrices.
#include <array>

#include <torch/nn/modules/linear.h>

#include "nn/attention.h"
#include "nn/pair_projection.h"

namespace translution {

class TranslutionAttention : public AttentionModule {
 public:
  TranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape, const TokenLayout& layout);
  at::Tensor forward(const at::Tensor& x, at::Tensor* probs = nullptr) override;
  std::vector<OffsetMagnitudes> offset_magnitudes() const override;
  const RelativeTable* table() const override { return &table_; }

 private:
  // Role 0, 1, 2 = q, k, v: pair tensor when relative, plain [B, N, D] otherwise.
  at::Tensor project(int role, const at::Tensor& x);

  AttentionSpec spec_;
  AttentionShape shape_;
  RelativeTable table_;
  std::array<bool, 3> relative_{};
  std::array<PairPlan, 3> plans_;
  std::array<PairPlanTensors, 3> plan_tensors_;  // the plans' indices on the last input's device
  std::array<at::Tensor, 3> banks_;              // [E, C, C'] parameters, relative roles only
  std::array<torch::nn::Linear, 3> plain_{nullptr, nullptr, nullptr};
  torch::nn::Linear to_out_{nullptr};
  at::Tensor valid_;
};

// [E, in, out], uniform(-1/sqrt(in), 1/sqrt(in)) per matrix, as torch::nn::Linear initialises.
at::Tensor make_relative_bank(int64_t entries, int64_t in, int64_t out);

// The plan's index tensors on `device`, moved there on first use.
const PairPlanTensors& plan_tensors_for(const PairPlan& plan, PairPlanTensors& cached, const c10::Device& device);

}  // namespace translution
