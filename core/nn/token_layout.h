#pragma once
// Where tokens sit, and which weight matrix each (query, source) pair uses.
//
// Translution (ICLR Eq. 1) gives every offset delta = p_i - p_j its own matrix:
//   q_ij = f_i Wq[delta_ij],  k_ji = f_j Wk[-delta_ij],  v_ij = f_j Wv[delta_ij].
// A RelativeTable spells that out per pair: entry(i, j) indexes each projection's
// bank of E matrices. The key bank is stored mirrored (its entry delta holds
// Wk[-delta]), so one entry per pair serves q, k and v alike and every projection
// sorts pairs the same way; `mirror` maps an entry to the paper's index for keys.
// The same machinery serves 2-D grids (with the relative CLS token of Appendix H),
// 1-D and causal 1-D sequences (Appendix C; a causal sequence may carry a CLS
// token that reads it, as a classifier needs), and the absolute pair encoding of
// Table 5.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

struct TokenLayout {
  enum class Kind { Grid2D, Sequence1D };
  Kind kind = Kind::Grid2D;
  int64_t height = 1;  // patch rows (1 for sequences)
  int64_t width = 1;   // patch columns, or sequence length
  bool cls = true;     // a CLS token at index 0
  // Sequences only: position i sees positions j <= i. A CLS token then reads every
  // position (it is what a classifier reads), and no position reads CLS, which has
  // seen later positions: the positions stay causal in every layer.
  bool causal = false;

  static TokenLayout grid(int64_t height, int64_t width, bool cls = true);
  static TokenLayout sequence(int64_t length, bool causal = false, bool cls = false);
  int64_t positions() const { return height * width; }
  int64_t tokens() const { return positions() + (cls ? 1 : 0); }
  std::string describe() const;
  void validate() const;  // throws translution::Error for impossible layouts
};

// How weight entries are assigned to pairs.
enum class PairEncoding {
  Relative,  // one matrix per offset (plus CLS self/in/out): Translution
  Absolute,  // one matrix per (i, j) pair: the Table 5 ablation
};

// What an entry of the bank means, for inspection and the studio's labels.
struct EntryInfo {
  enum class Kind { Offset, ClsSelf, ClsIn, ClsOut, Pair };
  Kind kind = Kind::Offset;
  int64_t dy = 0, dx = 0;  // Offset: delta = p_query - p_source
  int64_t i = 0, j = 0;    // Pair
};

struct RelativeTable {
  TokenLayout layout;
  PairEncoding encoding = PairEncoding::Relative;
  int64_t entries = 0;  // E: matrices per projection
  at::Tensor valid;     // bool [N, N]: false where causal masking hides j from i
  at::Tensor entry;     // int64 [N, N]: bank entry of pair (query i, source j)
  // Host copies of entry and valid for code that walks pairs, row-major by pair
  // i N + j: entry_of[i N + j] == entry[i][j], visible[i N + j] == valid[i][j] (0 or 1).
  // make_relative_table builds these first and the tensors from them.
  std::vector<int64_t> entry_of;
  std::vector<uint8_t> visible;
  std::vector<int64_t> mirror;  // entry of -delta (CLS in <-> out); the paper's key entry is mirror[e]
  std::vector<EntryInfo> info;  // size E

  int64_t tokens() const { return layout.tokens(); }
};

RelativeTable make_relative_table(const TokenLayout& layout, PairEncoding encoding = PairEncoding::Relative);

}  // namespace translution
