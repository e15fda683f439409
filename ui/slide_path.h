#pragma once
// The digit slid along a straight path through the canvas centre: the frames the
// Move panel plots and animates. Training placed every digit with its centre of
// ink mass at the canvas centre (MNIST centres its digits by mass), so the path
// is anchored there: the placements a whole number of patches from that anchor
// are frames of the path, exactly, not rounded to the nearest step.
#include <QList>
#include <QPointF>
#include <QVector>

#include "tensor_metatype.h"

namespace translution::ui {

enum class SlideDirection { LeftToRight, TopToBottom, Diagonal };

struct SlidePath {
  SlideDirection direction = SlideDirection::LeftToRight;
  QList<at::Tensor> frames;  // [S, S] each: the canvas's ink moved, none of it lost
  QVector<QPointF> centres;  // each frame's centre of ink mass, in canvas pixels
  QVector<int> whole_patch;  // the frames a whole number of patches from the anchor, in order
  int anchor = -1;           // the frame with the centre of mass nearest the canvas centre
  int start = -1;            // the frame nearest the canvas the path was made from

  bool empty() const { return frames.isEmpty(); }
  int size() const { return int(frames.size()); }
  // Frame i's centre along the path's axis: x, or y for top to bottom.
  double along(int i) const;
  // The frame whose centre lies within half a pixel of `centre`, else -1.
  int frameAt(const QPointF& centre) const;
};

// Centre of ink mass of `canvas` ([S, S]) in pixel indices (as DigitCanvas::massCentre); (-1, -1) when empty.
QPointF ink_mass_centre(const at::Tensor& canvas);

// `canvas`'s ink moved along `direction` every `step` pixels as far as it stays inside the canvas.
// `patch` must be a multiple of `step` for the whole-patch frames to exist. Empty for an empty canvas.
SlidePath slide_path(const at::Tensor& canvas, SlideDirection direction, int patch, int step);

}  // namespace translution::ui
