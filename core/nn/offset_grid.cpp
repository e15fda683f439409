#include "nn/offset_grid.h"

#include <cmath>

#include "nn/token_layout.h"

namespace translution {

std::vector<OffsetGrid> offset_grids(const std::vector<OffsetMagnitudes>& layer, const TokenLayout& layout) {
  const RelativeTable table = make_relative_table(layout);
  const int64_t grid_h = layout.height, grid_w = layout.width;
  std::vector<OffsetGrid> out;
  for (const OffsetMagnitudes& m : layer) {
    if (m.norms.numel() != table.entries) return {};  // not one matrix per offset
    const at::Tensor norms = m.norms.to(at::kCPU, at::kFloat).contiguous();
    const float* n = norms.data_ptr<float>();
    OffsetGrid g;
    g.projection = m.projection;
    g.grid = at::full({2 * grid_h - 1, 2 * grid_w - 1}, NAN, at::kFloat);  // NaN: no such offset (a causal sequence's negative ones)
    auto cells = g.grid.accessor<float, 2>();
    for (int64_t e = 0; e < table.entries; ++e) {
      const EntryInfo& info = table.info[size_t(e)];
      switch (info.kind) {
        case EntryInfo::Kind::Offset: cells[info.dy + grid_h - 1][info.dx + grid_w - 1] = n[e]; break;
        case EntryInfo::Kind::ClsSelf: g.cls_self = n[e]; break;
        case EntryInfo::Kind::ClsIn: g.cls_in = n[e]; break;
        case EntryInfo::Kind::ClsOut: g.cls_out = n[e]; break;
        case EntryInfo::Kind::Pair: return {};
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace translution
