#pragma once
// Offset-weight magnitudes laid out the way the papers draw them: one cell per
// offset delta = (dy, dx) over the (2H-1) x (2W-1) grid, plus the three CLS
// matrices (self, into CLS, out of CLS) of Appendix H.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nn/attention.h"
#include "nn/token_layout.h"

namespace translution {

struct OffsetGrid {
  std::string projection;  // "q", "k" or "v"
  at::Tensor grid;         // float [2H-1, 2W-1]: row dy + H - 1, column dx + W - 1; NaN where no matrix is
  float cls_self = 0, cls_in = 0, cls_out = 0;
};

// For a layer's magnitudes on the layout's tokens (a grid, or a sequence of L: a
// strip of 1 x (2L - 1), causal offsets only on its right half). Returns an empty
// list when the magnitudes are not per offset (absolute pair encoding).
std::vector<OffsetGrid> offset_grids(const std::vector<OffsetMagnitudes>& layer, const TokenLayout& layout);

}  // namespace translution
