#pragma once
// Signed values (an attribution map) as colours on a diverging scale centred on
// 0: blue for negative, white for 0, red for positive (ColorBrewer's RdBu), so a
// pixel that argues against a class never looks like one that argues for it. The
// CLI's picture puts the digit beside its map; the studio colours its overlay
// with the same ramp.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace translution {

// t in [-1, 1] (clamped; NaN as 0) -> uint8 [..., 3] RGB.
at::Tensor diverging_ramp(const at::Tensor& t);

// Where the scale -limit..+limit ends: the `quantile` of |value| over the map's non-zero values
// (linearly interpolated; 1: the largest), so that a few extreme pixels saturate instead of
// washing out the rest; 1 for a map of zeros.
double symmetric_limit(const at::Tensor& values, double quantile = 0.99);

// canvas [H, W] in [0, 1] (ink 1) and map [H, W] -> uint8 [H*cell, 2*W*cell + gaps + bar, 3]:
// the digit, dark ink on white, then the map on the scale -limit..+limit (limit > 0), then a
// vertical colour bar (+limit at the top, 0 at its middle).
at::Tensor attribution_picture(const at::Tensor& canvas, const at::Tensor& map, double limit, int64_t cell,
                               int64_t bar = 12);

}  // namespace translution
