#pragma once
// Which attention operator a layer uses, and its names on the command line.
#include <string>
#include <vector>

#include "nn/token_layout.h"

namespace translution {

enum class AttentionMethod {
  SelfAttention,        // plain multi-head self-attention (position only via the ViT's embedding)
  Translution,          // ICLR Eq. 1: offset-indexed matrices for the chosen of q, k, v
  LoRTranslution,       // ICLR Eq. 2: low-rank relative matrices, plus shared terms by default
  RelativeKeyVector,    // Shaw et al.: k_j + r[delta_ij]
  RelativeValueVector,  // Shaw et al.: v_j + r[delta_ij]
  RelativeBias,         // Swin / CoAtNet: a_ij + b[delta_ij] per head
  GatedPositional,      // ConViT's GPSA: content and positional attention mixed by a learned gate
  Rotary,               // 2-D RoPE: q and k rotated by each token's (x, y)
};

struct AttentionSpec {
  AttentionMethod method = AttentionMethod::SelfAttention;
  // Translution family: which projections are relative (QKV is the ICLR paper's
  // Translution; V alone the preprint's Eq. 5).
  bool rel_q = true, rel_k = true, rel_v = true;
  PairEncoding encoding = PairEncoding::Relative;  // Absolute: Table 5's per-pair matrices
  // LoR-Translution: relative dims per head (C1 in, C2 out) and the shared W^q, W^k, W^v (Appendix G).
  int64_t lor_c1 = 8, lor_c2 = 8;
  bool lor_shared = true;
  // LoR's relative values with several heads. Off (Eq. 2 as written): each head
  // weights the pair's whole value f_j W1v Wv[d] W2v and keeps its C'/H columns.
  // On (the public code's LoR): each head weights its own C2 slice of the low-rank
  // value f_j W1v Wv[d], and W2v maps the heads' slices, side by side, to C'.
  // The same for one head.
  bool lor_value_slices = false;
  // RoPE-Translution: the plain q and k are turned by their tokens' positions
  // (nn/rotary.h) before the product; only with relative values alone.
  bool rotary = false;

  // Translution or LoR-Translution (the operators with relative matrices).
  bool relative() const {
    return method == AttentionMethod::Translution || method == AttentionMethod::LoRTranslution;
  }
  std::string qkv_letters() const;  // "QKV", "V", ...
  std::string name() const;         // the CLI name, e.g. "translution-qk"
  void validate() const;            // throws translution::Error
};

struct AttentionChoice {
  std::string name;
  std::string description;
  AttentionSpec spec;
  bool absolute_embedding;  // whether the ViT adds a learned absolute position embedding
};

// Every named operator, in the order `translution model list` prints them.
const std::vector<AttentionChoice>& attention_choices();
// Looks a name up; throws translution::Error listing the valid names.
const AttentionChoice& attention_choice(const std::string& name);

}  // namespace translution
