#pragma once
// Offset knockout: replace the matrices W_q[delta], W_k[delta], W_v[delta] of chosen
// offsets and see what the model does without them.
//
// Offsets are the paper's, delta = p_query - p_source (ICLR Eq. 1):
//   q_ij = f_i Wq[delta_ij]   k_ji = f_j Wk[-delta_ij]   v_ij = f_j Wv[delta_ij]
// Knocking out delta for q and v changes the pairs (i, j) with p_i - p_j = delta;
// for k it changes Wk[delta], which the pairs with p_i - p_j = -delta use. The key
// bank is stored mirrored (nn/token_layout.h), so the paper's Wk of table entry e
// is the stored entry mirror[e]; this file is the one place that maps.
//
// Two replacements, because they answer different questions:
//  * Zero: the matrix becomes 0, so the offset contributes nothing (q_ij = 0 puts
//    the pair's relative logit at 0; v_ij = 0 drops its value). In LoR-Translution
//    the low-rank relative matrix is zeroed and the shared terms stay.
//  * Mean: the matrix becomes the mean of the bank's offset matrices (the CLS
//    matrices excluded), taken from the bank as it is when the knockout is applied.
//    The pair keeps a matrix of typical magnitude, so what goes is only the
//    information specific to that offset, as mean-ablation does in activation
//    patching; zeroing also removes the part every offset shares, and so measures
//    magnitude as much as position.
//
// Which matrices: in every chosen layer, the chosen offsets (and CLS matrices) of
// each chosen projection that the layer indexes by offset. A layer whose operator
// has no offset-indexed bank (self-attention, the other blocks of a hybrid) and a
// projection computed by a shared matrix (q and k of Translution-V) are left alone;
// a knockout that replaces no matrix at all is an error, as are an offset outside
// the grid, a layer outside the model and a model whose banks are indexed by pair
// (the absolute ablation of Table 5) rather than by offset.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/token_layout.h"
#include "nn/vit.h"

namespace translution {

// delta = p_query - p_source in patches; a sequence's offsets have dy = 0.
struct Offset {
  int64_t dy = 0, dx = 0;
  bool operator==(const Offset& o) const { return dy == o.dy && dx == o.dx; }
  bool operator<(const Offset& o) const { return dy != o.dy ? dy < o.dy : dx < o.dx; }
};

struct OffsetKnockout {
  enum class Replacement { Zero, Mean };
  std::vector<Offset> offsets;
  // Appendix H's matrices, in the paper's indexing: CLS to itself, an image token
  // into CLS (CLS is the query), CLS out to an image token (CLS is the source).
  bool cls_self = false, cls_in = false, cls_out = false;
  bool q = true, k = true, v = true;
  std::vector<int64_t> layers;  // empty: every layer
  Replacement replacement = Replacement::Zero;

  bool any_cls() const { return cls_self || cls_in || cls_out; }
  // "3 offsets + CLS, q k v, zero, all layers"
  std::string describe() const;
};

// "zero" or "mean", and back (throws translution::Error naming the value).
std::string replacement_name(OffsetKnockout::Replacement r);
OffsetKnockout::Replacement parse_replacement(const std::string& name);

// Every offset of the layout, as its RelativeTable orders them (row-major, dy then dx).
std::vector<Offset> layout_offsets(const TokenLayout& layout);
// The offsets whose Euclidean length sqrt(dy^2 + dx^2), in patches, exceeds r.
std::vector<Offset> offsets_beyond(const TokenLayout& layout, double r);
// The offsets with dy and dx between the corners' (inclusive, corners in any order);
// throws translution::Error for a corner outside the layout's offsets.
std::vector<Offset> offsets_in_rectangle(const TokenLayout& layout, Offset a, Offset b);

// A knockout applied in place that can be undone: the replaced matrices are kept
// and restore() (or the destructor) writes them back, bit for bit. One model can so
// serve many knockouts in turn without a copy each. Runs without gradients; the
// engine's derived weight copies see the change through the version counter
// (cpu/weight_stamp.h).
class AppliedKnockout {
 public:
  // Throws translution::Error (above) before changing anything.
  AppliedKnockout(ViT model, const OffsetKnockout& knockout);
  ~AppliedKnockout();
  AppliedKnockout(const AppliedKnockout&) = delete;
  AppliedKnockout& operator=(const AppliedKnockout&) = delete;

  void restore();
  // Forgets the replaced matrices: the knockout stays (apply_knockout).
  void keep();
  int64_t matrices() const { return matrices_; }  // W_delta replaced, over layers and projections

 private:
  struct Edit {
    at::Tensor bank;     // [E, C, C'], the parameter itself
    at::Tensor entries;  // int64 [n]: stored entries replaced
    at::Tensor saved;    // [n, C, C']: what they held
  };
  std::vector<Edit> edits_;
  int64_t matrices_ = 0;
};

// Applies a knockout for good; returns how many matrices it replaced.
int64_t apply_knockout(ViT& model, const OffsetKnockout& knockout);

// A deep copy: ViT(config) with every parameter and buffer copied, on the same
// device and in the same precision and mode; nothing shared with `model`.
ViT copy_model(const ViT& model);
// copy_model, then apply_knockout on the copy; `model` is untouched.
ViT knocked_out_copy(const ViT& model, const OffsetKnockout& knockout, int64_t* matrices = nullptr);

}  // namespace translution
