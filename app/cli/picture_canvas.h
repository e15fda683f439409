#pragma once
// A picture on a model's canvas, as `predict` and `attribute` both place it:
// MNIST's preparation of the picture (image/digit_preparation.h), then its 28x28
// frame at a pixel the user names, or centred.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "data/placement.h"

namespace translution::cli {

// The frame's top-left pixel from --at's "X,Y"; centred when `text` is empty. A
// frame that would leave the canvas is an error naming the range allowed.
Placement parse_at(const std::string& text, int64_t canvas);

// The picture at `path`, prepared as MNIST's digits were: [28, 28] uint8. Every
// error names the file.
at::Tensor read_digit(const std::string& path);

}  // namespace translution::cli
