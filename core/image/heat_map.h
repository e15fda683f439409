#pragma once
// Values on a grid as a colour image (viridis-like ramp: dark purple = low,
// yellow = high), for the translation-sweep PNGs the CLI writes.
#include <ATen/core/Tensor.h>

namespace translution {

// values [h, w] -> uint8 [h*cell, w*cell + bar, 3]; values are mapped from [low, high].
// A vertical colour bar (high at the top) of `bar` pixels is appended on the right
// after a white gap, so a reader can place a colour on the scale.
at::Tensor heat_map_rgb(const at::Tensor& values, double low, double high, int64_t cell, int64_t bar = 12);

// The ramp itself: t in [0, 1] -> uint8 [..., 3].
at::Tensor colour_ramp(const at::Tensor& t);

// Any five-anchor ramp: t in [0, 1] (clamped; NaN as 0) -> uint8 [..., 3], linear between the
// anchors (RGB) at 0, 1/4, 1/2, 3/4 and 1.
at::Tensor anchored_ramp(const at::Tensor& t, const float (&anchors)[5][3]);

}  // namespace translution
