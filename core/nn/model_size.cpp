#include "nn/model_size.h"

#include <string>

#include "nn/self_attention.h"
#include "util/error.h"

namespace translution {
namespace {

// a * b and a + b that throw instead of wrapping.
int64_t mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) throw Error("config: the model's size overflows 64-bit integers");
  return out;
}
int64_t add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) throw Error("config: the model's size overflows 64-bit integers");
  return out;
}

int64_t linear(int64_t in, int64_t out, bool bias) { return add(mul(in, out), bias ? out : 0); }

// N = H W + 1 (the patches and CLS), checked: a huge image must not wrap it around.
int64_t tokens(const ViTConfig& c) { return add(mul(c.grid_height(), c.grid_width()), 1); }

// One block's attention: the projections each operator registers (see its constructor).
int64_t attention_parameters(const ViTConfig& c, const AttentionSpec& s) {
  const int64_t C = c.dim, H = c.heads, D = mul(c.heads, c.head_dim);
  const bool out_proj = needs_output_projection({c.dim, c.heads, c.head_dim});
  int64_t n = out_proj ? linear(D, C, true) : 0;
  switch (s.method) {
    case AttentionMethod::SelfAttention: return add(n, mul(3, mul(C, D)));
    case AttentionMethod::Rotary: return add(n, mul(3, mul(C, D)));
    case AttentionMethod::RelativeKeyVector:
    case AttentionMethod::RelativeValueVector:
      return add(add(n, mul(3, mul(C, D))), mul(relative_entries(c, PairEncoding::Relative), D));
    case AttentionMethod::RelativeBias:
      return add(add(n, mul(3, mul(C, D))), mul(H, relative_entries(c, PairEncoding::Relative)));
    case AttentionMethod::GatedPositional: return add(add(n, mul(3, mul(C, D))), mul(4, H));
    case AttentionMethod::Translution: {
      const int64_t E = relative_entries(c, s.encoding);
      for (const bool rel : {s.rel_q, s.rel_k, s.rel_v}) n = add(n, rel ? mul(E, mul(C, D)) : mul(C, D));
      return n;
    }
    case AttentionMethod::LoRTranslution: {
      const int64_t E = relative_entries(c, s.encoding), in = mul(s.lor_c1, H), low = mul(s.lor_c2, H);
      const bool rel[3] = {s.rel_q, s.rel_k, s.rel_v};
      for (int role = 0; role < 3; ++role) {
        if (s.lor_shared) n = add(n, mul(C, D));
        if (rel[role])
          n = add(add(n, mul(C, in)), mul(E, mul(in, low)));
        else if (role < 2 && (s.rel_q || s.rel_k))
          n = add(n, mul(C, low));
      }
      return s.rel_v ? add(n, mul(low, D)) : n;
    }
  }
  return n;
}

}  // namespace

int64_t relative_entries(const ViTConfig& c, PairEncoding encoding) {
  if (encoding == PairEncoding::Absolute) return mul(tokens(c), tokens(c));
  const int64_t positions = mul(c.grid_height(), c.grid_width());
  if (c.layout == "sequence")
    return add(add(mul(2, positions), -1), 3);                  // offsets -(L-1)..L-1, then CLS's three
  if (c.layout == "causal-sequence") return add(positions, 3);  // offsets 0..L-1, then CLS's three
  return add(mul(add(mul(2, c.grid_height()), -1), add(mul(2, c.grid_width()), -1)), 3);
}

int64_t block_parameter_count(const ViTConfig& c, int64_t index) {
  const int64_t C = c.dim, mlp = add(linear(C, c.mlp_dim, true), linear(c.mlp_dim, C, true));
  return add(add(mul(4, C), mlp),
             attention_parameters(c, c.attention_spec(index)));  // two LayerNorms, MLP, attention
}

int64_t parameter_count(const ViTConfig& c) {
  const int64_t C = c.dim, patch_dim = mul(mul(c.patch, c.patch), c.channels);
  int64_t n =
      add(add(mul(2, patch_dim), linear(patch_dim, C, true)), mul(2, C));  // LayerNorm, Linear, LayerNorm
  n = add(n, C);                                                           // the CLS token
  if (c.position_embedding)
    n = add(n, mul(tokens(c), C));
  else
    tokens(c);  // an image whose token count overflows is refused either way
  // Blocks differ only in their attention operator: the first `first_blocks` may use another one.
  const int64_t first = c.first_blocks > 0 ? std::min(c.first_blocks, c.depth) : 0;
  const int64_t block_first = block_parameter_count(c, 0), block_rest = block_parameter_count(c, c.depth - 1);
  n = add(n, add(mul(first, block_first), mul(c.depth - first, block_rest)));
  return add(add(n, mul(2, C)), linear(C, c.classes, true));  // final LayerNorm, head
}

}  // namespace translution
