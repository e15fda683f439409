#pragma once
// How the public Translution code's ViT state dicts (ViT/models at commit 13730aa:
// transformer, rope_transformer, translution in its seven Q/K/V forms,
// lor_translution in its seven, rope_translution, lor_rope_translution, and the
// hybrids whose later blocks are RoPE attention) name and arrange our parameters.
// docs/pytorch-interop.md tabulates the mapping.
//
// Each public tensor is one or more of our parameters stacked along its first
// axis, each possibly reordered or scaled:
//  * offset banks: both index offsets as (dy + H - 1)(2W - 1) + (dx + W - 1), then
//    CLS itself, into CLS, out of CLS. The public query bank is read at the
//    mirrored offset (its q_ij uses W[p_j - p_i]); keys and values are not.
//  * the public LoR halves both its logits and its values ((a + b) / 2): we fold
//    the halves into the query-side and value weights (exact: a power of two).
//  * the public RoPE turns channel k with k + d/2 (rows first); ours turns 2k with
//    2k + 1 (columns first): the same rotation of a permuted head, so the q and k
//    weights' rows are permuted.
//  * the public rotary tables (rope.cos_cached, rope.sin_cached) are constants:
//    written on export, checked on import.
#include <string>
#include <vector>

#include "nn/vit_config.h"

namespace translution {

struct PublicPiece {
  enum class Map {
    Copy,           // the parameter as it is
    Transpose,      // a [in, out] parameter as a Linear's [out, in] weight
    MirrorOffsets,  // a bank read at -delta (CLS in and out swapped)
    RotaryRows,     // q or k rows, each head's channels in the public RoPE's order
    RotaryCos,      // the public rotary tables: constants, no parameter
    RotarySin,
  };
  std::string name;  // our parameter ("" for the rotary tables)
  Map map = Map::Copy;
  double scale = 1;                  // public = scale * ours
  int64_t first_row = 0, rows = -1;  // a slice of our parameter's rows (-1: all)
};

struct PublicTensor {
  std::string key;                  // the public state dict's name
  std::vector<PublicPiece> pieces;  // stacked along the first axis
  bool optional = false;            // constants some public files carry and others not
};

// The public state dict of a model with this config, in the public code's order.
// Throws translution::Error when the public code has no such model (naming why).
std::vector<PublicTensor> public_vit_layout(const ViTConfig& config);

// Which public model file builds it ("translution", "lor_rope_translution", ...).
std::string public_vit_source(const ViTConfig& config);

}  // namespace translution
