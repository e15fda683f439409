#include "io/public_vit_layout.h"

#include "util/error.h"

namespace translution {
namespace {

using Map = PublicPiece::Map;

// What a block of ours is in the public code.
enum class BlockKind { Attention, Rope, Translution, LoR, LoRRope };

BlockKind block_kind(const ViTConfig& c, int64_t block) {
  const std::string name = c.block_model(block);
  const AttentionSpec spec = c.attention_spec(block);
  if (spec.method == AttentionMethod::SelfAttention) return BlockKind::Attention;
  if (spec.method == AttentionMethod::Rotary) return BlockKind::Rope;
  if (!spec.relative() || spec.encoding != PairEncoding::Relative)
    throw Error(name +
                " has no counterpart in the public code (it has self-attention, RoPE attention and the "
                "Translution operators on offsets)");
  if (spec.method == AttentionMethod::Translution) {
    if (spec.rotary)
      throw Error(
          "rope-translution has no counterpart in the public code: its rope_translution builds rotary "
          "tables but does not turn q and k in its Translution blocks (that model is translution-v here)");
    return BlockKind::Translution;
  }
  if (!c.lor_shared)
    throw Error(name + " without the shared terms has no counterpart: the public LoR always has them");
  if (c.lor_c1 != c.lor_c2)
    throw Error(name + " with C1 = " + std::to_string(c.lor_c1) + " and C2 = " + std::to_string(c.lor_c2) +
                " has no counterpart: the public LoR has one width (dim_relenc)");
  if (spec.rel_v && c.heads > 1 && !c.lor_value_slices)
    throw Error(name +
                " weights each pair's whole value per head, as Eq. 2 reads; the public LoR weights each "
                "head's slice of the low-rank value (a model with --lor-value-slices)");
  return spec.rotary ? BlockKind::LoRRope : BlockKind::LoR;
}

// The blocks' kinds, checked against the public code's model families: one
// operator throughout, or a hybrid whose later blocks are RoPE attention.
std::vector<BlockKind> block_kinds(const ViTConfig& c) {
  if (c.layout != "grid")
    throw Error("a " + c.layout + " layout has no counterpart: the public ViTs read 2-D patch grids");
  std::vector<BlockKind> kinds;
  for (int64_t b = 0; b < c.depth; ++b) kinds.push_back(block_kind(c, b));
  const BlockKind first = kinds.front(), last = kinds.back();
  const bool hybrid = first != last;
  for (int64_t b = 0; b < c.depth; ++b)
    if (kinds[size_t(b)] != (b < c.first_blocks && hybrid ? first : last))
      throw Error("blocks of " + c.block_model(b) +
                  " mixed with others have no counterpart in the public code");
  if (hybrid && (last != BlockKind::Rope || first == BlockKind::Attention))
    throw Error(
        "a hybrid has a public counterpart only with Translution first and RoPE attention after (--model "
        "rope "
        "--first-model NAME)");
  if (first == BlockKind::Attention || (first == BlockKind::Rope && !hybrid)) {
    if (!c.position_embedding)
      throw Error(c.model +
                  " without a position embedding has no counterpart: the public transformer and "
                  "rope_transformer always add a learned one");
  }
  return kinds;
}

PublicTensor copy(const std::string& key, const std::string& name, double scale = 1) {
  return {key, {{name, Map::Copy, scale}}};
}

void add_linear(std::vector<PublicTensor>& out, const std::string& key, const std::string& name) {
  out.push_back(copy(key + ".weight", name + ".weight"));
  out.push_back(copy(key + ".bias", name + ".bias"));
}

void add_rotary_tables(std::vector<PublicTensor>& out, const std::string& prefix, bool optional) {
  out.push_back({prefix + "rope.cos_cached", {{"", Map::RotaryCos}}, optional});
  out.push_back({prefix + "rope.sin_cached", {{"", Map::RotarySin}}, optional});
}

// Rows of a fused [3D, C] (or [D, C]) weight: q, k, v in that order.
PublicPiece rows_of(const std::string& name, int64_t role, int64_t D, Map map = Map::Copy, double scale = 1) {
  return {name, map, scale, role * D, D};
}

void add_translution(std::vector<PublicTensor>& out, const std::string& P, const std::string& A,
                     const AttentionSpec& s) {
  const bool rel[3] = {s.rel_q, s.rel_k, s.rel_v};
  const char* roles[3] = {"q", "k", "v"};
  PublicTensor plain{P + "to_", {}};  // the plain projections, fused in q, k, v order
  std::string letters;
  for (int r = 0; r < 3; ++r) {
    if (rel[r]) {
      out.push_back({P + "to_" + roles[r] + ".unique_params",
                     {{A + "w" + roles[r], r == 0 ? Map::MirrorOffsets : Map::Copy}}});
    } else {
      letters += roles[r];
      plain.pieces.push_back({A + "to_" + roles[r] + ".weight"});
    }
  }
  plain.key += letters + ".weight";
  if (!plain.pieces.empty()) out.push_back(plain);
  // The public rope_translution computes translution-v, carrying rotary tables it does not use.
  if (!s.rel_q && !s.rel_k) add_rotary_tables(out, P, true);
}

void add_lor(std::vector<PublicTensor>& out, const std::string& P, const std::string& A,
             const AttentionSpec& s, bool rotary) {
  const bool low_rank_logits = s.rel_q || s.rel_k;
  // The public sums are halved; ours are not: our weights are the public ones halved.
  const double q_half = low_rank_logits ? 2 : 1, v_half = s.rel_v ? 2 : 1;
  const Map turn = rotary ? Map::RotaryRows : Map::Copy;
  out.push_back({P + "to_qkv.weight",
                 {{A + "to_q.weight", turn, q_half},
                  {A + "to_k.weight", turn},
                  {A + "to_v.weight", Map::Copy, v_half}}});
  if (rotary) add_rotary_tables(out, P, false);
  if (s.rel_q) {
    out.push_back(copy(P + "to_q1.weight", A + "q_down.weight", q_half));
    out.push_back({P + "to_q2.unique_params", {{A + "wq", Map::MirrorOffsets}}});
  } else if (s.rel_k) {
    out.push_back(copy(P + "to_q1.weight", A + "q_low.weight", q_half));
  }
  if (s.rel_k) {
    out.push_back(copy(P + "to_k1.weight", A + "k_down.weight"));
    out.push_back(copy(P + "to_k2.unique_params", A + "wk"));
  } else if (s.rel_q) {
    out.push_back(copy(P + "to_k1.weight", A + "k_low.weight"));
  }
  if (s.rel_v) {
    out.push_back(copy(P + "to_v1.weight", A + "v_down.weight"));
    out.push_back(copy(P + "to_v2.unique_params", A + "wv"));
    out.push_back({P + "to_v3.weight", {{A + "v_up", Map::Transpose, 2}}});
  }
}

void add_block(std::vector<PublicTensor>& out, const ViTConfig& c, int64_t b, BlockKind kind,
               const std::string& T) {
  const std::string P = T + ".layers." + std::to_string(b) + ".0.",
                    F = T + ".layers." + std::to_string(b) + ".1.";
  const std::string ours = "block" + std::to_string(b) + ".", A = ours + "attention.";
  const int64_t D = c.heads * c.head_dim;
  const AttentionSpec spec = c.attention_spec(b);
  add_linear(out, P + "norm", ours + "norm1");
  switch (kind) {
    case BlockKind::Attention: out.push_back(copy(P + "to_qkv.weight", A + "to_qkv.weight")); break;
    case BlockKind::Rope: {
      const std::string w = A + "to_qkv.weight";
      out.push_back(
          {P + "to_qkv.weight",
           {rows_of(w, 0, D, Map::RotaryRows), rows_of(w, 1, D, Map::RotaryRows), rows_of(w, 2, D)}});
      add_rotary_tables(out, P, false);
      break;
    }
    case BlockKind::Translution: add_translution(out, P, A, spec); break;
    case BlockKind::LoR: add_lor(out, P, A, spec, false); break;
    case BlockKind::LoRRope: add_lor(out, P, A, spec, true); break;
  }
  if (!(c.heads == 1 && c.head_dim == c.dim)) add_linear(out, P + "to_out.0", A + "to_out");
  add_linear(out, F + "net.0", ours + "norm2");
  add_linear(out, F + "net.1", ours + "fc1");
  add_linear(out, F + "net.4", ours + "fc2");
}

}  // namespace

std::string public_vit_source(const ViTConfig& c) {
  const std::vector<BlockKind> kinds = block_kinds(c);
  switch (kinds.front()) {
    case BlockKind::Attention: return "transformer";
    case BlockKind::Rope: return "rope_transformer";
    case BlockKind::Translution: return "translution";
    case BlockKind::LoR: return "lor_translution";
    case BlockKind::LoRRope: return "lor_rope_translution";
  }
  return "";
}

std::vector<PublicTensor> public_vit_layout(const ViTConfig& c) {
  c.validate();
  const std::vector<BlockKind> kinds = block_kinds(c);
  const bool plain = kinds.front() == BlockKind::Attention || kinds.front() == BlockKind::Rope;
  const std::string T = plain ? "transformer" : "translution";
  std::vector<PublicTensor> out;
  add_linear(out, "to_patch_embedding.1", "patch_norm");
  add_linear(out, "to_patch_embedding.2", "patch_embed");
  add_linear(out, "to_patch_embedding.3", "embed_norm");
  if (c.position_embedding) out.push_back(copy("pos_embedding", "position_embedding"));
  out.push_back(copy("cls_token", "cls_token"));
  add_linear(out, T + ".norm", "final_norm");
  for (int64_t b = 0; b < c.depth; ++b) add_block(out, c, b, kinds[size_t(b)], T);
  add_linear(out, "mlp_head", "head");
  return out;
}

}  // namespace translution
