#include "nn/attention.h"

#include "nn/lor_translution_attention.h"
#include "nn/positional_attention.h"
#include "nn/self_attention.h"
#include "nn/translution_attention.h"
#include "util/error.h"

namespace translution {

std::vector<at::Tensor> relative_banks(const torch::nn::Module& module) {
  std::vector<at::Tensor> banks;
  for (const auto& child : module.modules()) {
    const auto* attention = dynamic_cast<const AttentionModule*>(child.get());
    if (!attention) continue;
    for (const at::Tensor& bank : attention->relative_banks()) banks.push_back(bank);
  }
  return banks;
}

const at::Tensor& on_device(at::Tensor& cached, const at::Device& device) {
  if (cached.defined() && cached.device() != device) cached = cached.to(device);
  return cached;
}

const at::Tensor& converted_like(const at::Tensor& constant, at::Tensor& cached, const at::Tensor& like) {
  if (!cached.defined() || cached.device() != like.device() || cached.scalar_type() != like.scalar_type())
    cached = constant.to(like.options());
  return cached;
}

at::Tensor AttentionModule::forward_queries(const EngineOptions& engine, const at::Tensor& x,
                                            int64_t queries) {
  if (x.dim() != 3 || queries < 1 || queries > x.size(1))
    throw Error("attention: outputs of " + std::to_string(queries) + " queries asked of input " +
                std::string(c10::str(x.sizes())) + " (expected [B, N, C] and 1 <= queries <= N)");
  return attend(engine, x, queries, nullptr);
}

at::Tensor query_rows(const at::Tensor& valid, int64_t queries) {
  return valid.defined() && valid.size(0) != queries ? valid.narrow(0, 0, queries) : valid;
}

at::Tensor query_tokens(const at::Tensor& x, int64_t queries) {
  return queries == x.size(1) ? x : x.narrow(1, 0, queries).contiguous();
}

std::shared_ptr<AttentionModule> make_attention(const AttentionSpec& spec, const AttentionShape& shape,
                                                const TokenLayout& layout) {
  if (shape.dim < 1 || shape.heads < 1 || shape.head_dim < 1)
    throw Error("attention needs positive width, heads and head dim (got dim " + std::to_string(shape.dim) +
                ", heads " + std::to_string(shape.heads) + ", head dim " + std::to_string(shape.head_dim) +
                ")");
  spec.validate();
  switch (spec.method) {
    case AttentionMethod::SelfAttention: return std::make_shared<SelfAttention>(shape, layout);
    case AttentionMethod::Translution: return std::make_shared<TranslutionAttention>(spec, shape, layout);
    case AttentionMethod::LoRTranslution:
      return std::make_shared<LoRTranslutionAttention>(spec, shape, layout);
    default: return std::make_shared<PositionalAttention>(spec, shape, layout);
  }
  throw Error("unknown attention method");
}

}  // namespace translution
