#include "image/ink.h"

#include <algorithm>
#include <cstdlib>

#include <ATen/ATen.h>

namespace translution {

InkBox ink_box(const at::Tensor& canvas) {
  const at::Tensor mask = canvas > 0;                       // [S, S]
  const at::Tensor rows = mask.any(1).nonzero().flatten();  // rows holding ink
  const at::Tensor cols = mask.any(0).nonzero().flatten();  // columns holding ink
  if (rows.numel() == 0) return {};
  const int64_t top = rows.min().item<int64_t>(), left = cols.min().item<int64_t>();
  return {top, left, rows.max().item<int64_t>() - top + 1, cols.max().item<int64_t>() - left + 1};
}

at::Tensor shifted(const at::Tensor& canvas, int64_t dx, int64_t dy) {
  at::Tensor out = at::zeros_like(canvas);
  const int64_t h = canvas.size(0) - std::abs(dy), w = canvas.size(1) - std::abs(dx);
  if (h <= 0 || w <= 0) return out;
  out.narrow(0, std::max<int64_t>(0, dy), h)
      .narrow(1, std::max<int64_t>(0, dx), w)
      .copy_(canvas.narrow(0, std::max<int64_t>(0, -dy), h).narrow(1, std::max<int64_t>(0, -dx), w));
  return out;
}

void clamp_shift_to_canvas(const InkBox& ink, int64_t size, int64_t& dx, int64_t& dy) {
  if (ink.empty()) {
    dx = dy = 0;
    return;
  }
  dx = std::clamp(dx, -ink.left, size - ink.right());
  dy = std::clamp(dy, -ink.top, size - ink.bottom());
}

at::Tensor ink_placed_at(const at::Tensor& canvas, const InkBox& ink, int64_t top, int64_t left) {
  at::Tensor out = at::zeros_like(canvas);
  if (ink.empty()) return out;
  out.narrow(0, top, ink.height)
      .narrow(1, left, ink.width)
      .copy_(canvas.narrow(0, ink.top, ink.height).narrow(1, ink.left, ink.width));
  return out;
}

}  // namespace translution
