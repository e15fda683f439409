#include "image/image_file.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include "io/byte_source.h"
#include "util/error.h"

namespace translution {
namespace {

std::vector<unsigned char> read_all(const std::string& path) {
  const FileBytes file(path);  // a regular file, or a one-line error naming it
  if (file.size() > uint64_t(kMaxImageBytes))
    throw Error("image " + path + " is " + std::to_string(file.size()) + " bytes; pictures of up to " +
                std::to_string(kMaxImageBytes / 1000000) + " MB are read");
  std::vector<unsigned char> bytes(size_t(file.size()));
  file.read(0, bytes.data(), bytes.size());
  return bytes;
}

// libjpeg's own ceiling on the memory one decompression may use (its pools), beside the pixel budget.
constexpr long kJpegMemoryLimit = 1L << 30;

void check_pixel_budget(const std::string& path, int64_t width, int64_t height) {
  if (width * height <= kMaxImagePixels) return;
  throw Error("image " + path + " is " + std::to_string(width) + " x " + std::to_string(height) +
              " pixels (" + std::to_string(width * height / 1000000) + " megapixels); pictures of up to " +
              std::to_string(kMaxImagePixels / 1000000) + " megapixels are read: scale it down first");
}

// Grey composited onto white from interleaved grey and alpha samples, each times `scale`
// (premultiplied: the grey already carries its alpha): one pass into one float picture, with
// no intermediate the picture's size, so a large picture costs its pixels and this alone.
template <typename Sample>
at::Tensor on_white(const Sample* ga, int64_t h, int64_t w, float scale, bool premultiplied) {
  at::Tensor out = at::empty({h, w}, at::kFloat);  // [H, W] in [0, 1]
  float* grey = out.data_ptr<float>();
  for (int64_t i = 0; i < h * w; ++i) {
    const float g = float(ga[2 * i]) * scale, alpha = float(ga[2 * i + 1]) * scale;
    grey[i] = (premultiplied ? g : g * alpha) + (1 - alpha);
  }
  return out;
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
  // Grey + alpha: transparency is composited onto white below. A 16-bit file is read as
  // 16-bit linear values (libpng premultiplies those by alpha), so that its levels scale
  // linearly; libpng's 8-bit output would put them through the sRGB curve.
  const bool sixteen_bit = (image.format & PNG_FORMAT_FLAG_LINEAR) != 0;
  image.format = sixteen_bit ? PNG_FORMAT_LINEAR_Y_ALPHA : PNG_FORMAT_GA;
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    throw Error("image " + path + " is a damaged PNG: " + message);
  }
  const int64_t h = image.height, w = image.width;
  if (sixteen_bit)
    return on_white(reinterpret_cast<const uint16_t*>(pixels.data()), h, w, 1.0f / 65535, true);
  return on_white(pixels.data(), h, w, 1.0f / 255, false);
}

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated = false;             // the data ended before the picture did
  char damage[JMSG_LENGTH_MAX] = "";  // libjpeg's first warning of corrupt data, if any
};

// libjpeg prints its warnings (a corrupt but readable file) to stderr by default: a user gets the
// picture or one error line, never libjpeg's chatter.
void jpeg_quiet(j_common_ptr) {}

// A warning (level -1) means libjpeg met damaged data and went on: the file ended early and
// the rest was filled with grey, or a segment was cut, a Huffman code was bad, bytes were
// skipped. That picture is not the one the user has, so it is refused. Two warnings are about
// labels, not pixels (an unknown JFIF version or Adobe transform), and pass.
void jpeg_note(j_common_ptr info, int level) {
  if (level >= 0) return;  // trace messages
  auto* error = reinterpret_cast<JpegError*>(info->err);
  ++info->err->num_warnings;
  const int code = info->err->msg_code;
  if (code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM) return;
  if (code == JWRN_JPEG_EOF) error->truncated = true;
  if (error->damage[0] == '\0') (*info->err->format_message)(info, error->damage);
}

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
  error.manager.emit_message = jpeg_note;
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
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    throw Error("image " + path + " is a CMYK JPEG, which is not read: save it as greyscale or RGB");
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
  if (error.truncated)
    throw Error("image " + path + " is a truncated JPEG: the file ends before the picture does");
  if (error.damage[0] != '\0') throw Error("image " + path + " is a damaged JPEG: " + error.damage);
  out = at::from_blob(pixels.data(), {int64_t(height), int64_t(width)}, at::kByte).to(at::kFloat).div(255.0);
  return out;
}

}  // namespace

at::Tensor read_image_gray(const std::string& path) { return decode_image_gray(read_all(path), path); }

at::Tensor decode_image_gray(const std::vector<unsigned char>& bytes, const std::string& path) {
  static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_signature, 8) == 0) return decode_png(path, bytes);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
    return decode_jpeg(path, bytes);
  throw Error(path + " is not a PNG or JPEG image");
}

}  // namespace translution
