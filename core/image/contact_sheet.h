#pragma once
// Tiles equally sized images into one grid image, with a thin separator line.
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

// images: [H, W] float in [0, 1]; rows*cols >= images.size(). Separator is mid-grey.
at::Tensor contact_sheet(const std::vector<at::Tensor>& images, int64_t rows, int64_t cols, int64_t gap = 2);

}  // namespace translution
