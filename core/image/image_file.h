#pragma once
// Reading a photo or scan of a digit: PNG (any bit depth, palette, alpha) or
// JPEG, decided by the file's signature, not its name.
#include <string>

#include <ATen/core/Tensor.h>

namespace translution {

// Grey levels [H, W] float in [0, 1] (0 black). Transparent pixels count as white
// paper. Throws translution::Error naming the file when it is missing, not a
// PNG or JPEG, or damaged.
at::Tensor read_image_gray(const std::string& path);

}  // namespace translution
