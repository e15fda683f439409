#pragma once
// Where the ink is on a canvas, and the canvas moved: the one definition the
// studio's canvas, its experiments and the sweeps share. Ink is every pixel
// above 0, so that cropping a digit by its box and placing it elsewhere never
// loses a faint anti-aliased edge.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace translution {

// The bounding box of the ink, in canvas pixels (rows from the top, columns from the left).
struct InkBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
  bool empty() const { return height == 0; }
  int64_t bottom() const { return top + height; }  // one past the last row
  int64_t right() const { return left + width; }   // one past the last column
  double centre_x() const { return double(left) + double(width) / 2.0; }
  double centre_y() const { return double(top) + double(height) / 2.0; }
};

// `canvas`: [S, S] (any float dtype). Empty when no pixel is above 0.
InkBox ink_box(const at::Tensor& canvas);

// `canvas` moved `dx` pixels right and `dy` down (negative: left, up); what leaves the canvas is lost.
at::Tensor shifted(const at::Tensor& canvas, int64_t dx, int64_t dy);

// The shift that moves the ink by (dx, dy) as far as it goes without any ink leaving the canvas.
void clamp_shift_to_canvas(const InkBox& ink, int64_t size, int64_t& dx, int64_t& dy);

// `canvas`'s ink placed with its box's top-left corner at (top, left) on an empty canvas of the same
// size; the caller keeps the box inside the canvas.
at::Tensor ink_placed_at(const at::Tensor& canvas, const InkBox& ink, int64_t top, int64_t left);

}  // namespace translution
