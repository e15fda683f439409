#pragma once
// The Vision Transformer of the papers: patches -> LayerNorm -> Linear -> LayerNorm,
// a CLS token (and, for the ViT baseline, a learned absolute position embedding),
// pre-norm blocks (attention, then an MLP with GELU), a final LayerNorm and a
// linear head on the CLS token. The attention operator is the config's choice.
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "nn/attention.h"
#include "nn/vit_config.h"

namespace translution {

class ViTBlockImpl : public torch::nn::Module {
 public:
  ViTBlockImpl(const ViTConfig& config, int64_t index);
  // probs: the attention [B, heads, N, N]; input: what the attention read, [B, N, C].
  at::Tensor forward(const EngineOptions& engine, const at::Tensor& x, at::Tensor* probs = nullptr,
                     at::Tensor* input = nullptr);
  // The block's outputs for the first `queries` tokens only: [B, N, C] -> [B, queries, C].
  at::Tensor forward_queries(const EngineOptions& engine, const at::Tensor& x, int64_t queries);
  AttentionModule& attention() { return *attention_; }
  const AttentionModule& attention() const { return *attention_; }

 private:
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  std::shared_ptr<AttentionModule> attention_;
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(ViTBlock);

// Only the CLS token's output of the last block reaches the head, so by default a
// forward without inspection computes that block for the CLS query alone (every
// token still a key and a value): the same logits and gradients, without the other
// tokens' queries, attention rows, output projection and MLP in that block
// (docs/performance.md). EngineOptions::cls_only_last_block off: every token's,
// as the equations are written (`translution bench --last-block all`).

// What a forward pass can report besides the logits, when asked.
struct ViTInspection {
  std::vector<at::Tensor> attention;  // per layer: [B, heads, N, N], CLS at index 0
  std::vector<at::Tensor>
      inputs;  // per layer: the attention's input, [B, N, C] (after the block's LayerNorm)
  std::vector<at::Tensor>
      tokens;  // the residual stream [B, N, C]: the embedded tokens, then each block's output
};

class ViTImpl : public torch::nn::Module {
 public:
  explicit ViTImpl(const ViTConfig& config);

  // images: [B, channels, H, W] (normalised) -> logits [B, classes], computed as
  // `engine` says (util/engine_options.h; its backward too). With `inspection`,
  // also the attention of every layer and head.
  at::Tensor forward(const EngineOptions& engine, const at::Tensor& images,
                     ViTInspection* inspection = nullptr);

  const ViTConfig& config() const { return config_; }
  int64_t parameter_count() const;
  // Per layer, the relative matrices' magnitudes (empty for plain attention layers).
  std::vector<std::vector<OffsetMagnitudes>> offset_magnitudes() const;
  // Per layer, what each value matrix W_v[delta] carried for the inspected image
  // (AttentionModule::value_contributions); `inspection` from forward() of one image.
  std::vector<std::vector<OffsetMagnitudes>> value_contributions(const ViTInspection& inspection) const;
  // Whether any block's attention runs per-matrix products (Translution, LoR).
  bool per_matrix_products() const;
  const ViTBlockImpl& block(int64_t i) const { return *blocks_[size_t(i)]; }

 private:
  at::Tensor patchify(const at::Tensor& images) const;

  ViTConfig config_;
  torch::nn::LayerNorm patch_norm_{nullptr}, embed_norm_{nullptr}, final_norm_{nullptr};
  torch::nn::Linear patch_embed_{nullptr}, head_{nullptr};
  at::Tensor cls_token_, position_embedding_;
  std::vector<ViTBlock> blocks_;
};
TORCH_MODULE(ViT);

// A model whose initial weights depend on `seed` alone. Every ViT draws its weights
// from LibTorch's default generator under one process-wide lock, and this seeds
// that generator under the same lock: models built at once on several threads (the
// studio's experiments train two side by side) get the weights each gets alone.
ViT seeded_vit(const ViTConfig& config, uint64_t seed);

}  // namespace translution
