#pragma once
// Multi-head self-attention (Vaswani et al.): shared W^q, W^k, W^v for every token.
#include <torch/nn/modules/linear.h>

#include "nn/attention.h"

namespace translution {

class SelfAttention : public AttentionModule {
 public:
  SelfAttention(const AttentionShape& shape, const TokenLayout& layout);

 protected:
  at::Tensor attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                    at::Tensor* probs) override;

 private:
  // A few queries' outputs with the keys and values left unprojected
  // (self_attention_reassociates).
  at::Tensor attend_reassociated(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                                 at::Tensor* probs);

  AttentionShape shape_;
  torch::nn::Linear to_qkv_{nullptr}, to_out_{nullptr};
  at::Tensor valid_;  // causal mask, or undefined
};

// ViT leaves out the output projection when one head already spans the width.
bool needs_output_projection(const AttentionShape& shape);

// Whether the outputs of the first `queries` of `tokens` tokens, for a batch of
// `images`, are computed with the keys and values left unprojected. Each head's
// logits q_i . (x_j Wk_h) equal (q_i Wk_h^T) . x_j, and its output
// sum_j a_ij x_j Wv_h equals (sum_j a_ij x_j) Wv_h (the projections have no
// bias), so a few queries (ViT's last block: the CLS token alone) need no key or
// value of any token: per query 3 C D + 2 H N C multiply-adds instead of the
// 3 N C D of projecting every token. Only where that is less work, and not for a
// single image: its plain products run on the engine's one-image kernels, and
// the reassociated path's small LibTorch ops cost more than they save there
// (docs/performance.md measures both). Those small products run in the tensors'
// own precision, fp32 also under bf16 training (cpu/bf16_gemm.h).
bool self_attention_reassociates(const EngineOptions& engine, const AttentionShape& shape, int64_t tokens,
                                 int64_t queries, int64_t images);
// The multiply-adds of one image's attention for the first `queries` of `tokens`
// tokens, output projection included, as attend() computes them for a batch of
// `images` (nn/model_cost's count).
double self_attention_macs(const EngineOptions& engine, const AttentionShape& shape, int64_t tokens,
                           int64_t queries, int64_t images);
// Whether a reassociated path may apply at all: engine.query_reassociation
// (on by default; off projects every token as the full forward does, here and in
// LoR-Translution's few queries), a few queries of more tokens, in a batch
// (self-attention's and LoR's rules both start here).
bool reassociation_may_apply(const EngineOptions& engine, int64_t tokens, int64_t queries, int64_t images);

}  // namespace translution
