#include "nn/vit.h"

#include <ATen/ATen.h>

#include "cpu/inference_passes.h"
#include "cpu/linear.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/exclusive_draws.h"

namespace translution {

ViTBlockImpl::ViTBlockImpl(const ViTConfig& c, int64_t index) {
  const TokenLayout layout = c.token_layout();
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  attention_ = register_module("attention",
                               make_attention(c.attention_spec(index), {c.dim, c.heads, c.head_dim}, layout));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  fc1_ = register_module("fc1", torch::nn::Linear(c.dim, c.mlp_dim));
  fc2_ = register_module("fc2", torch::nn::Linear(c.mlp_dim, c.dim));
}

at::Tensor ViTBlockImpl::forward(const EngineOptions& engine, const at::Tensor& x, at::Tensor* probs,
                                 at::Tensor* input) {
  const at::Tensor normed = normalize(engine, norm1_, x);
  if (input) *input = normed;
  const at::Tensor h = x + attention_->forward(engine, normed, probs);
  return linear_add(engine, fc2_, linear_gelu(engine, fc1_, normalize(engine, norm2_, h)), h);
}

at::Tensor ViTBlockImpl::forward_queries(const EngineOptions& engine, const at::Tensor& x, int64_t queries) {
  const at::Tensor h =
      x.narrow(1, 0, queries) + attention_->forward_queries(engine, normalize(engine, norm1_, x), queries);
  return linear_add(engine, fc2_, linear_gelu(engine, fc1_, normalize(engine, norm2_, h)), h);
}

ViTImpl::ViTImpl(const ViTConfig& config) : config_(config) {
  config_.validate();
  const ExclusiveDraws drawing;  // this model's initial weights, drawn without another's between
  const ViTConfig& c = config_;
  const int64_t patch_dim = c.patch * c.patch * c.channels;
  patch_norm_ = register_module("patch_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({patch_dim})));
  patch_embed_ = register_module("patch_embed", torch::nn::Linear(patch_dim, c.dim));
  embed_norm_ = register_module("embed_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  cls_token_ = register_parameter("cls_token", at::randn({1, 1, c.dim}));
  if (c.position_embedding)
    position_embedding_ = register_parameter("position_embedding", at::randn({1, c.tokens(), c.dim}));
  for (int64_t b = 0; b < c.depth; ++b)
    blocks_.push_back(register_module("block" + std::to_string(b), ViTBlock(c, b)));
  final_norm_ = register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  head_ = register_module("head", torch::nn::Linear(c.dim, c.classes));
}

ViT seeded_vit(const ViTConfig& config, uint64_t seed) {
  const ExclusiveDraws drawing;  // the seed and the construction that draws from it
  at::manual_seed(seed);
  return ViT(config);
}

at::Tensor ViTImpl::patchify(const at::Tensor& images) const {
  const ViTConfig& c = config_;
  if (images.dim() != 4 || images.size(1) != c.channels || images.size(2) != c.image_height ||
      images.size(3) != c.image_width)
    throw Error("model expects images of shape [B, " + std::to_string(c.channels) + ", " +
                std::to_string(c.image_height) + ", " + std::to_string(c.image_width) + "], got " +
                std::string(c10::str(images.sizes())));
  const int64_t B = images.size(0), gh = c.grid_height(), gw = c.grid_width(), p = c.patch;
  // [B, ch, gh, p, gw, p] -> [B, gh, gw, p, p, ch]: each patch's pixels row by row, channels last.
  return images.reshape({B, c.channels, gh, p, gw, p})
      .permute({0, 2, 4, 3, 5, 1})
      .reshape({B, gh * gw, p * p * c.channels});
}

at::Tensor ViTImpl::forward(const EngineOptions& engine, const at::Tensor& images,
                            ViTInspection* inspection) {
  const at::Tensor patches = normalize(engine, patch_norm_, patchify(images));
  at::Tensor x = normalize(engine, embed_norm_, linear(engine, patch_embed_, patches));
  x = at::cat({cls_token_.expand({x.size(0), 1, config_.dim}), x}, 1);
  if (position_embedding_.defined()) x = x + position_embedding_;
  if (inspection) *inspection = ViTInspection{{}, {}, {x}};
  const size_t last = blocks_.size() - 1;
  for (size_t b = 0; b <= last; ++b) {
    if (b == last && !inspection && engine.cls_only_last_block) {
      x = blocks_[b]->forward_queries(engine, x, 1);  // [B, 1, C]: the CLS token's output
      break;
    }
    at::Tensor probs, input;
    x = blocks_[b]->forward(engine, x, inspection ? &probs : nullptr, inspection ? &input : nullptr);
    if (!inspection) continue;
    inspection->attention.push_back(probs);
    inspection->inputs.push_back(input);
    inspection->tokens.push_back(x);
  }
  return head_->forward(normalize(engine, final_norm_, x.select(1, 0)));
}

int64_t ViTImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

std::vector<std::vector<OffsetMagnitudes>> ViTImpl::offset_magnitudes() const {
  std::vector<std::vector<OffsetMagnitudes>> out;
  for (const auto& block : blocks_) out.push_back(block->attention().offset_magnitudes());
  return out;
}

std::vector<std::vector<OffsetMagnitudes>> ViTImpl::value_contributions(
    const ViTInspection& inspection) const {
  if (inspection.inputs.size() != blocks_.size() || inspection.attention.size() != blocks_.size())
    throw Error("value contributions need an inspected forward of every block");
  std::vector<std::vector<OffsetMagnitudes>> out;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const at::Tensor c =
        blocks_[b]->attention().value_contributions(inspection.inputs[b][0], inspection.attention[b][0]);
    out.push_back(c.defined() ? std::vector<OffsetMagnitudes>{{"v", c}} : std::vector<OffsetMagnitudes>{});
  }
  return out;
}

bool ViTImpl::per_matrix_products() const {
  for (const auto& block : blocks_)
    if (block->attention().per_matrix_products()) return true;
  return false;
}

}  // namespace translution
