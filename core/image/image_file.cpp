#include "image/image_file.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <jpeglib.h>
#include <png.h>

#include "util/error.h"

namespace translution {
namespace {

std::vector<unsigned char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open image " + path + ": " + std::strerror(errno));
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// libjpeg's own ceiling on the memory one decompression may use (its pools), beside the pixel budget.
constexpr long kJpegMemoryLimit = 1L << 30;

void check_pixel_budget(const std::string& path, int64_t width, int64_t height) {
  if (width * height <= kMaxImagePixels) return;
  throw Error("image " + path + " is " + std::to_string(width) + " x " + std::to_string(height) + " pixels (" +
              std::to_string(width * height / 1000000) + " megapixels); pictures of up to " +
              std::to_string(kMaxImagePixels / 1000000) + " megapixels are read: scale it down first");
}

at::Tensor decode_png(const std::string& path, const std::vector<unsigned char>& bytes) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    throw Error("image " + path + " is a damaged PNG: " + image.message);
  // The header is read: refuse a picture over the budget before decoding a pixel. libpng's own
  // limits (1,000,000 pixels a side, by default) stay in force underneath.
  try {
    check_pixel_budget(path, image.width, image.height);
  } catch (...) {
    png_image_free(&image);
    throw;
  }
  image.format = PNG_FORMAT_GA;  // grey + alpha: transparency is composited onto white below
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    throw Error("image " + path + " is a damaged PNG: " + message);
  }
  const int64_t h = image.height, w = image.width;
  at::Tensor ga = at::from_blob(pixels.data(), {h, w, 2}, at::kByte).to(at::kFloat).div(255.0);
  const at::Tensor grey = ga.select(2, 0), alpha = ga.select(2, 1);
  return (grey * alpha + (1 - alpha)).contiguous();
}

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// libjpeg prints its warnings (a corrupt but readable file) to stderr by default: a user gets the
// picture or one error line, never libjpeg's chatter.
void jpeg_quiet(j_common_ptr) {}

void jpeg_fail(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

at::Tensor decode_jpeg(const std::string& path, const std::vector<unsigned char>& bytes) {
  jpeg_decompress_struct info;
  JpegError error;
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jpeg_fail;
  error.manager.output_message = jpeg_quiet;
  at::Tensor out;  // assigned only after the last possible longjmp
  std::vector<unsigned char> pixels;
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    throw Error("image " + path + " is a damaged JPEG: " + error.message);
  }
  jpeg_create_decompress(&info);
  info.mem->max_memory_to_use = kJpegMemoryLimit;
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (int64_t(info.image_width) * int64_t(info.image_height) > kMaxImagePixels) {
    const int64_t w = info.image_width, h = info.image_height;
    jpeg_destroy_decompress(&info);
    check_pixel_budget(path, w, h);  // throws
  }
  info.out_color_space = JCS_GRAYSCALE;
  jpeg_start_decompress(&info);
  const size_t width = info.output_width, height = info.output_height;
  pixels.resize(width * height);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = pixels.data() + size_t(info.output_scanline) * width;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  out = at::from_blob(pixels.data(), {int64_t(height), int64_t(width)}, at::kByte).to(at::kFloat).div(255.0);
  return out;
}

}  // namespace

at::Tensor read_image_gray(const std::string& path) { return decode_image_gray(read_all(path), path); }

at::Tensor decode_image_gray(const std::vector<unsigned char>& bytes, const std::string& path) {
  static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_signature, 8) == 0) return decode_png(path, bytes);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return decode_jpeg(path, bytes);
  throw Error(path + " is not a PNG or JPEG image");
}

}  // namespace translution
