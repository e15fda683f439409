#pragma once
// PNG files (grey or RGB). Output is byte-for-byte reproducible (no timestamps),
// and written atomically unless the name says otherwise.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace translution {

// `pixels`: [H, W] float in [0, 1] (clamped) or uint8.
void write_png_gray(const std::string& path, const at::Tensor& pixels);
// `pixels`: [H, W, 3] float in [0, 1] (clamped) or uint8, RGB.
void write_png_rgb(const std::string& path, const at::Tensor& pixels);
// As write_png_rgb, but straight to `path` with no temporary of its own: for a writer that
// util/atomic_file.h's write_files_atomically already hands a temporary path.
void write_png_rgb_unstaged(const std::string& path, const at::Tensor& pixels);

}  // namespace translution
