#pragma once
// LoR-Translution (ICLR Eq. 2). Relative matrices act in a small space: C -> C1
// (down), C1 x C2 per offset, and for values C2 -> C' (up), per head C1 and C2:
//   q_ij = f_i W1q Wq[d_ij]      k_ji = f_j W1k Wk[-d_ij]     (plain f W1 when not relative)
//   a_ij = (q_ij . k_ji + q_i . k_j) / sqrt(C')
//   v_ij = f_j (W1v Wv[d_ij] W2v + Wv)
// The shared terms q_i . k_j and f_j Wv are on by default (Appendix G drops them).
// With lor_value_slices, each head weights its C2 slice of the low-rank value and
// W2v maps the slices side by side (the public code's arrangement).
// Values use Appendix D's order: (sum_j alpha_ij f_j W1v Wv[d_ij]) W2v, so no
// N x N x C' tensor is formed.
// LoR-RoPE-Translution: relative values alone, with the shared q_i and k_j
// turned by their tokens' positions (nn/rotary.h) before the product.
#include <vector>

#include <torch/nn/modules/linear.h>

#include "nn/attention.h"
#include "nn/pair_order.h"
#include "nn/rotary.h"
#include "util/built_once.h"

namespace translution {

class LoRTranslutionAttention : public AttentionModule {
 public:
  LoRTranslutionAttention(const AttentionSpec& spec, const AttentionShape& shape, const TokenLayout& layout);
  std::vector<OffsetMagnitudes> offset_magnitudes() const override;
  at::Tensor value_contributions(const at::Tensor& x, const at::Tensor& alpha) const override;
  bool per_matrix_products() const override { return true; }
  std::vector<at::Tensor> relative_banks() const override;

 protected:
  at::Tensor attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                    at::Tensor* probs) override;

 private:
  // A few queries (ViT's last block: the CLS token alone) whose pairs use few bank
  // entries (the CLS query: 2), in a batch: as self-attention's
  // (self_attention_reassociates), each query meets the unprojected inputs. Per
  // query, entry g and head h, logits q_ij^h . k_ji^h = x_j . kappa[g, h] with
  // kappa the key side's projections (W1k Bk[g] or the plain one, and the shared
  // W^k) applied transposed to the query's vectors; values sum the inputs first,
  // sum_{j of g} alpha_ij x_j, then go through W1v Bv[g] W2v and the shared W^v.
  // Returns the heads' outputs before the output projection, in the tensors' own
  // precision (fp32 also under bf16 training).
  at::Tensor attend_reassociated(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                                 const std::vector<int64_t>& entries, at::Tensor* probs);

  // The reassociated path's constants for (queries, entries) in x's dtype and on
  // its device: which entry each pair uses, [M, G, N], and the entries' indices [G].
  struct ReassociationKey {
    int64_t queries;
    std::vector<int64_t> entries;
    caffe2::TypeMeta dtype;
    c10::Device device;
    bool operator==(const ReassociationKey& o) const {
      return queries == o.queries && entries == o.entries && dtype == o.dtype && device == o.device;
    }
  };
  struct Reassociation {
    at::Tensor assign, index;
  };
  const Reassociation& reassociation(int64_t queries, const std::vector<int64_t>& entries,
                                     const at::Tensor& x);

  AttentionSpec spec_;
  AttentionShape shape_;
  RelativeTable table_;
  PairOrders orders_;
  int64_t low_in_, low_out_;                                 // C1 and C2 times heads
  at::Tensor banks_[3];                                      // [E, C1 H, C2 H] (k stored mirrored)
  torch::nn::Linear down_[3] = {nullptr, nullptr, nullptr};  // C -> C1 H (relative) or C2 H (plain q/k)
  at::Tensor up_v_;                                          // [C2 H, C'] for relative values
  torch::nn::Linear shared_[3] = {nullptr, nullptr, nullptr};
  torch::nn::Linear to_out_{nullptr};
  RotaryPositions rotary_;  // LoR-RoPE-Translution only
  at::Tensor valid_;
  BuiltOnce<ReassociationKey, Reassociation> reassociations_;
};

}  // namespace translution
