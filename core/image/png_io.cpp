#include "image/png_io.h"

#include <cstdio>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <png.h>

#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {

at::Tensor to_u8(const at::Tensor& pixels) {
  if (pixels.scalar_type() == at::kByte) return pixels.contiguous();
  return pixels.to(at::kFloat).clamp(0.0, 1.0).mul(255.0).round().to(at::kByte).contiguous();
}

void write_png_file(const std::string& path, const at::Tensor& u8, bool rgb) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw Error(path + ": cannot open for writing");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw Error(path + ": out of memory creating PNG writer");
  }
  // libpng reports errors by longjmp; nothing with a destructor lives between here and the end.
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw Error(path + ": failed while writing PNG data");
  }
  const auto height = png_uint_32(u8.size(0)), width = png_uint_32(u8.size(1));
  png_init_io(png, file.get());
  png_set_IHDR(png, info, width, height, 8, rgb ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 9);
  png_write_info(png, info);
  const uint8_t* base = u8.data_ptr<uint8_t>();
  for (png_uint_32 row = 0; row < height; ++row)
    png_write_row(png, const_cast<png_bytep>(base + size_t(row) * width * (rgb ? 3 : 1)));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fflush(file.get()) != 0) throw Error(path + ": write failed (disk full?)");
}

void check_rgb(const std::string& path, const at::Tensor& pixels) {
  if (pixels.dim() != 3 || pixels.size(2) != 3) throw Error(path + ": a colour PNG needs an [H, W, 3] image");
}

}  // namespace

void write_png_gray(const std::string& path, const at::Tensor& pixels) {
  if (pixels.dim() != 2) throw Error(path + ": a grey PNG needs a 2-D [H, W] image");
  const at::Tensor u8 = to_u8(pixels);
  write_file_atomically(path, [&](const std::string& temp) { write_png_file(temp, u8, false); });
}

void write_png_rgb(const std::string& path, const at::Tensor& pixels) {
  check_rgb(path, pixels);
  write_file_atomically(path, [&](const std::string& temp) { write_png_rgb_unstaged(temp, pixels); });
}

void write_png_rgb_unstaged(const std::string& path, const at::Tensor& pixels) {
  check_rgb(path, pixels);
  write_png_file(path, to_u8(pixels), true);
}

}  // namespace translution
