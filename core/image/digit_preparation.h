#pragma once
// A handwritten digit from any picture, prepared the way MNIST's digits were:
// grey scale; light-on-dark (inverted when the paper is light); the ink's
// bounding box scaled, keeping its aspect, so its longer side is 20 pixels;
// placed in a 28x28 frame so that its centre of mass is the frame's centre.
#include <ATen/core/Tensor.h>

namespace translution {

// `grey`: [H, W] float in [0, 1]. Returns uint8 [28, 28] (0 background), like an
// MNIST image. Throws translution::Error when there is no ink to find.
at::Tensor prepare_digit(const at::Tensor& grey);

}  // namespace translution
