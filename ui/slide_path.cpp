#include "slide_path.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "image/ink.h"

namespace translution::ui {

double SlidePath::along(int i) const {
  return direction == SlideDirection::TopToBottom ? centres[i].y() : centres[i].x();
}

int SlidePath::frameAt(const QPointF& centre) const {
  for (int i = 0; i < size(); ++i)
    if (std::abs(centres[i].x() - centre.x()) <= 0.5 && std::abs(centres[i].y() - centre.y()) <= 0.5)
      return i;
  return -1;
}

QPointF ink_mass_centre(const at::Tensor& canvas) {
  const at::Tensor c = canvas.to(at::kDouble);
  const double mass = c.sum().item<double>();
  if (mass <= 0) return {-1, -1};
  const at::Tensor index = at::arange(c.size(0), c.options());
  return {(c.sum(0) * index).sum().item<double>() / mass, (c.sum(1) * index).sum().item<double>() / mass};
}

namespace {

// Shifts a + step * j, j in [lo, hi], keep the ink inside: narrows [lo, hi] to them.
void narrow_steps(int64_t a, int64_t lowest, int64_t highest, int step, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(lo, int64_t(std::ceil(double(lowest - a) / step)));
  hi = std::min<int64_t>(hi, int64_t(std::floor(double(highest - a) / step)));
}

}  // namespace

SlidePath slide_path(const at::Tensor& canvas, SlideDirection direction, int patch, int step) {
  SlidePath path;
  path.direction = direction;
  const InkBox ink = ink_box(canvas);
  if (ink.empty() || step < 1) return path;
  const int64_t size = canvas.size(0);
  const QPointF mass = ink_mass_centre(canvas);
  // The farthest shifts each way that keep every pixel of ink on the canvas.
  int64_t low_x = -size, low_y = -size, high_x = size, high_y = size;
  clamp_shift_to_canvas(ink, size, low_x, low_y);
  clamp_shift_to_canvas(ink, size, high_x, high_y);
  // The anchor: the shift that puts the centre of mass nearest the canvas centre.
  const double centre = double(size) / 2;
  const int64_t ax = std::clamp<int64_t>(std::lround(centre - mass.x()), low_x, high_x);
  const int64_t ay = std::clamp<int64_t>(std::lround(centre - mass.y()), low_y, high_y);
  const bool move_x = direction != SlideDirection::TopToBottom,
             move_y = direction != SlideDirection::LeftToRight;
  int64_t lo = -size, hi = size;
  if (move_x) narrow_steps(ax, low_x, high_x, step, lo, hi);
  if (move_y) narrow_steps(ay, low_y, high_y, step, lo, hi);
  int64_t nearest_start = -1;
  for (int64_t j = lo; j <= hi; ++j) {
    const int64_t dx = move_x ? ax + step * j : 0, dy = move_y ? ay + step * j : 0;
    if (patch > 0 && (step * j) % patch == 0) path.whole_patch << path.size();
    if (j == 0) path.anchor = path.size();
    const int64_t distance = std::abs(dx) + std::abs(dy);
    if (nearest_start < 0 || distance < nearest_start) {
      nearest_start = distance;
      path.start = path.size();
    }
    path.frames << shifted(canvas, dx, dy);
    path.centres << mass + QPointF(double(dx), double(dy));
  }
  return path;
}

}  // namespace translution::ui
