#pragma once
// LoR-Translution (ICLR Eq. 2). Relative matrices act in a small space: C -> C1
// (down), C1 x C2 per offset, and for values C2 -> C' (up), per head C1 and C2:
//   q_ij = f_i W1q Wq[d_ij]      k_ji = f_j W1k Wk[-d_ij]     (plain f W1 when not relative)
//   a_ij = (q_ij . k_ji + q_i . k_j) / sqrt(C')
//   v_ij = f_j (W1v Wv[d_ij] W2v + Wv)
// The shared terms q_i . k_j and f_j Wv are on by default (Appendix G drops them).
// Values use Appendix D's order: (sum_j alpha_ij f_j W1v Wv[d_ij]) W2v, so no
// N x N x C' tensor is formed.
#include <torch/nn/modules/linear.h>

#include "nn/attention.h"
#include "nn/relative_ops.h"

namespace translution {

class LoRTranslutionAttention : public AttentionModule {
 public:
  LoRTranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape, const TokenLayout& layout);
  std::vector<OffsetMagnitudes> offset_magnitudes() const override;
  bool per_matrix_products() const override { return true; }
  std::vector<at::Tensor> relative_banks() const override;

 protected:
  at::Tensor attend(const at::Tensor& x, int64_t queries, at::Tensor* probs) override;

 private:
  AttentionSpec spec_;
  AttentionShape shape_;
  RelativeTable table_;
  PairOrders orders_;
  int64_t low_in_, low_out_;  // C1 and C2 times heads
  at::Tensor banks_[3];  // [E, C1 H, C2 H] (k stored mirrored)
  torch::nn::Linear down_[3] = {nullptr, nullptr, nullptr};  // C -> C1 H (relative) or C2 H (plain q/k)
  at::Tensor up_v_;                                          // [C2 H, C'] for relative values
  torch::nn::Linear shared_[3] = {nullptr, nullptr, nullptr};
  torch::nn::Linear to_out_{nullptr};
  at::Tensor valid_;
};

}  // namespace translution
