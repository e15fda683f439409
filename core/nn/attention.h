#pragma once
// The interface every attention operator implements, and the factory that
// builds one from an AttentionSpec.
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "nn/attention_spec.h"
#include "nn/token_layout.h"
#include "util/engine_options.h"
#include "util/unused.h"

namespace translution {

struct AttentionShape {
  int64_t dim = 192;  // model width C
  int64_t heads = 3;
  int64_t head_dim = 64;  // C' per head
  int64_t inner() const { return heads * head_dim; }
};

// Frobenius norm of every relative matrix of one projection (for LoR: of the
// effective C x C' product), one value per bank entry, in RelativeTable order.
struct OffsetMagnitudes {
  std::string projection;  // "q", "k" or "v"
  at::Tensor norms;        // float [E]
};

class AttentionModule : public torch::nn::Module {
 public:
  // x: [B, N, C]. When `probs` is given it receives the attention [B, heads, N, N].
  // `engine`: how to compute it (util/engine_options.h); backward follows it too.
  at::Tensor forward(const EngineOptions& engine, const at::Tensor& x, at::Tensor* probs = nullptr) {
    return attend(engine, x, x.size(1), probs);
  }
  // The outputs of the first `queries` tokens only, [B, queries, C]; every token
  // is still a key and a value. ViT's last block asks for the CLS token's alone
  // (nn/vit.h): nothing reads the others, and their queries, rows of attention
  // and MLP are most of that block's work.
  at::Tensor forward_queries(const EngineOptions& engine, const at::Tensor& x, int64_t queries);
  virtual std::vector<OffsetMagnitudes> offset_magnitudes() const { return {}; }
  // For one image (x: the attention's input [N, C], alpha: its attention [heads, N, N]),
  // what each offset-indexed value matrix carried: per bank entry e, in the paper's
  // indexing, float [E] on the CPU:
  //   sum over pairs (i, j) that use W_v[e], sum over heads h, of alpha^h_ij |x_j W_v[e]_h|
  // (W_v[e]_h: head h's columns). Undefined where the values are not offset-indexed.
  virtual at::Tensor value_contributions(const at::Tensor& x, const at::Tensor& alpha) const {
    unused(x, alpha);
    return {};
  }
  // Whether forward runs nn/relative_projection's per-matrix products (offset-indexed banks).
  virtual bool per_matrix_products() const { return false; }
  // Its offset-indexed banks [E, C, C'] (those per_matrix_products multiplies), for
  // copies kept in another precision (cpu/bf16_weights.h).
  virtual std::vector<at::Tensor> relative_banks() const { return {}; }

 protected:
  // Both of the above: the outputs of tokens [0, queries) (1 <= queries <= N);
  // `probs`, when given, receives [B, heads, queries, N].
  virtual at::Tensor attend(const EngineOptions& engine, const at::Tensor& x, int64_t queries,
                            at::Tensor* probs) = 0;
};

// Every offset-indexed bank of the module's attention layers (relative_banks), in module order.
std::vector<at::Tensor> relative_banks(const torch::nn::Module& module);

// The rows of a [N, N] mask (undefined: none) for the first `queries` tokens.
at::Tensor query_rows(const at::Tensor& valid, int64_t queries);
// The first `queries` tokens of x [B, N, C], contiguous (the engine's dense paths
// take contiguous inputs): the input of a query-side projection.
at::Tensor query_tokens(const at::Tensor& x, int64_t queries);

// Index and mask tensors are not buffers (Module::to(dtype) would turn them into
// floats); operators keep them here and move them to the input's device on use.
const at::Tensor& on_device(at::Tensor& cached, const at::Device& device);
// `constant` in like's dtype on like's device, converted once into `cached`: a
// conversion in every forward would copy from the host each time, a wait on a
// GPU's stream that no CUDA graph can capture (infer/graphed_forward.h).
const at::Tensor& converted_like(const at::Tensor& constant, at::Tensor& cached, const at::Tensor& like);

std::shared_ptr<AttentionModule> make_attention(const AttentionSpec& spec, const AttentionShape& shape,
                                                const TokenLayout& layout);

}  // namespace translution
