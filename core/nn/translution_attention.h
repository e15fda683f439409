#pragma once
// Translution (ICLR Eq. 1): for the chosen of q, k, v, every offset between the
// query and source token selects its own C x C' matrix:
//   q_ij = f_i Wq[d_ij]   k_ji = f_j Wk[-d_ij]   v_ij = f_j Wv[d_ij]
//   a_ij = q_ij . k_ji / sqrt(C')   alpha_i = softmax_j(a_i)   f'_i = sum_j alpha_ij v_ij
// The projections that are not relative are ordinary shared matrices.
// RoPE-Translution: relative values, with the plain q and k turned by their
// tokens' positions (nn/rotary.h) before the product.
#include <array>

#include <torch/nn/modules/linear.h>

#include "nn/attention.h"
#include "nn/pair_order.h"
#include "nn/rotary.h"

namespace translution {

class TranslutionAttention : public AttentionModule {
 public:
  TranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape, const TokenLayout& layout);
  std::vector<OffsetMagnitudes> offset_magnitudes() const override;
  at::Tensor value_contributions(const at::Tensor& x, const at::Tensor& alpha) const override;
  bool per_matrix_products() const override { return true; }
  std::vector<at::Tensor> relative_banks() const override;

 protected:
  at::Tensor attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                    at::Tensor* probs) override;

 private:
  AttentionSpec spec_;
  AttentionShape shape_;
  RelativeTable table_;
  PairOrders orders_;
  std::array<at::Tensor, 3> banks_;  // [E, C, C'] for the relative ones of q, k, v (k stored mirrored)
  std::array<torch::nn::Linear, 3> plain_{nullptr, nullptr, nullptr};
  torch::nn::Linear to_out_{nullptr};
  RotaryPositions rotary_;  // RoPE-Translution only
  at::Tensor valid_;
};

// [E, in, out], uniform(-1/sqrt(in), 1/sqrt(in)) per matrix, as torch::nn::Linear initialises.
at::Tensor make_relative_bank(int64_t entries, int64_t in, int64_t out);

}  // namespace translution
