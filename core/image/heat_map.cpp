#include "image/heat_map.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

at::Tensor anchored_ramp(const at::Tensor& t, const float (&anchors)[5][3]) {
  const at::Tensor table = at::from_blob(const_cast<float*>(&anchors[0][0]), {5, 3}, at::kFloat).clone();
  const at::Tensor x = t.to(at::kFloat).nan_to_num(0).clamp(0, 1) * 4;  // [0, 4]: which anchors, how far
  const at::Tensor i0 = x.floor().clamp_max(3).to(at::kLong);
  const at::Tensor f = (x - i0.to(at::kFloat)).unsqueeze(-1);
  auto shape = i0.sizes().vec();
  shape.push_back(3);
  const at::Tensor lo = table.index_select(0, i0.flatten()).view(shape);
  const at::Tensor hi = table.index_select(0, (i0 + 1).flatten()).view(shape);
  return (lo + (hi - lo) * f).round().clamp(0, 255).to(at::kByte);
}

at::Tensor colour_ramp(const at::Tensor& t) {
  // Five anchors of matplotlib's viridis (a perceptually uniform map).
  static const float anchors[5][3] = {
      {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  return anchored_ramp(t, anchors);
}

at::Tensor heat_map_rgb(const at::Tensor& values, double low, double high, int64_t cell, int64_t bar) {
  if (values.dim() != 2) throw Error("a heat map needs a 2-D grid of values");
  if (!(high > low)) throw Error("a heat map needs high > low");
  const at::Tensor t = (values.to(at::kFloat) - float(low)) / float(high - low);
  at::Tensor map = colour_ramp(t).repeat_interleave(cell, 0).repeat_interleave(cell, 1);
  if (bar <= 0) return map.contiguous();
  const int64_t height = map.size(0), gap = std::max<int64_t>(2, bar / 2);
  const at::Tensor ramp = at::linspace(1, 0, height, at::kFloat).unsqueeze(1).expand({height, bar});
  const at::Tensor white = at::full({height, gap, 3}, 255, at::kByte);
  return at::cat({map, white, colour_ramp(ramp)}, 1).contiguous();
}

}  // namespace translution
