#include "nn/offset_grid.h"

#include <cmath>

#include <ATen/ATen.h>

#include "nn/token_layout.h"

namespace translution {

std::vector<OffsetGrid> offset_grids(const std::vector<OffsetMagnitudes>& layer, const TokenLayout& layout) {
  const RelativeTable table = make_relative_table(layout);
  const int64_t grid_h = layout.height, grid_w = layout.width;
  // Where each entry's norm goes: offset entries to their cell, CLS's three to their fields.
  std::vector<int64_t> offsets, rows, cols;
  int64_t cls_self = -1, cls_in = -1, cls_out = -1;  // -1: no CLS token
  for (int64_t e = 0; e < table.entries; ++e) {
    const EntryInfo& info = table.info[size_t(e)];
    switch (info.kind) {
      case EntryInfo::Kind::Offset:
        offsets.push_back(e);
        rows.push_back(info.dy + grid_h - 1);
        cols.push_back(info.dx + grid_w - 1);
        break;
      case EntryInfo::Kind::ClsSelf: cls_self = e; break;
      case EntryInfo::Kind::ClsIn: cls_in = e; break;
      case EntryInfo::Kind::ClsOut: cls_out = e; break;
      case EntryInfo::Kind::Pair: return {};
    }
  }
  const at::Tensor offset_index = at::tensor(offsets, at::kLong);
  const at::Tensor cells[] = {at::tensor(rows, at::kLong), at::tensor(cols, at::kLong)};
  std::vector<OffsetGrid> out;
  for (const OffsetMagnitudes& m : layer) {
    if (m.norms.numel() != table.entries) return {};  // not one matrix per offset
    const at::Tensor norms =
        m.norms.detach().to(at::kCPU, at::kFloat).reshape({-1});  // the grid joins no graph
    OffsetGrid g;
    g.projection = m.projection;
    g.grid = at::full({2 * grid_h - 1, 2 * grid_w - 1}, NAN,
                      at::kFloat);  // NaN: no such offset (a causal sequence's negative ones)
    g.grid.index_put_({cells[0], cells[1]}, norms.index_select(0, offset_index));
    if (cls_self >= 0) g.cls_self = norms[cls_self].item<float>();
    if (cls_in >= 0) g.cls_in = norms[cls_in].item<float>();
    if (cls_out >= 0) g.cls_out = norms[cls_out].item<float>();
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace translution
