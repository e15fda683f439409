#pragma once
// Reading a photo or scan of a digit: PNG (any bit depth, palette, alpha) or
// JPEG, decided by the file's signature, not its name.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

// The most pixels a picture may have: 64 megapixels (an 8000 x 8000 scan). The
// size is read from the PNG or JPEG header and a larger picture is refused before
// anything is decoded: a 1 MB PNG of 30000 x 30000 white pixels would otherwise
// be decoded into gigabytes of pixels only to say "no digit found".
constexpr int64_t kMaxImagePixels = 64'000'000;
// The largest picture file read: 64 MB, checked against the file's size before a byte
// is read (a PNG padded to gigabytes, or /dev/zero, is refused at once).
constexpr int64_t kMaxImageBytes = 64'000'000;

// Grey levels [H, W] float in [0, 1] (0 black). Transparent pixels count as white
// paper; 16-bit PNGs are scaled linearly (v / 65535). Throws translution::Error
// naming the file when it is missing, not a regular file, over kMaxImageBytes, not
// a PNG or JPEG, damaged or truncated, a CMYK JPEG, or larger than kMaxImagePixels.
at::Tensor read_image_gray(const std::string& path);
// The same for a picture's bytes already in memory; `name` is used in messages.
at::Tensor decode_image_gray(const std::vector<unsigned char>& bytes, const std::string& name);

}  // namespace translution
