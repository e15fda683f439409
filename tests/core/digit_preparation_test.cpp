// Reading pictures (PNG, JPEG) and preparing a digit the way MNIST did.
#include "image/digit_preparation.h"

#include <cstdio>
#include <cstring>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/mnist.h"
#include "image/image_file.h"
#include "image/png_io.h"
#include "temp_dir.h"
#include "util/error.h"

namespace translution {
namespace {

using test_support::mnist_dir;
using test_support::TempDir;
using test_support::write_bytes;

void write_jpeg(const std::string& path, const at::Tensor& u8) {
  jpeg_compress_struct info;
  jpeg_error_mgr error;
  info.err = jpeg_std_error(&error);
  jpeg_create_compress(&info);
  FILE* file = std::fopen(path.c_str(), "wb");
  jpeg_stdio_dest(&info, file);
  info.image_width = JDIMENSION(u8.size(1));
  info.image_height = JDIMENSION(u8.size(0));
  info.input_components = 1;
  info.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 90, TRUE);
  jpeg_start_compress(&info, TRUE);
  const at::Tensor c = u8.contiguous();
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = c.data_ptr<uint8_t>() + size_t(info.next_scanline) * info.image_width;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(file);
}

double correlation(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kDouble).flatten(), y = b.to(at::kDouble).flatten();
  const at::Tensor xc = x - x.mean(), yc = y - y.mean();
  return ((xc * yc).sum() / (xc.norm() * yc.norm())).item<double>();
}

// An MNIST digit, enlarged 3x, as dark ink on light paper with a margin: what a
// photo of a written digit looks like after cropping.
at::Tensor paper_picture(const at::Tensor& digit_u8) {
  at::Tensor big = digit_u8.to(at::kFloat).div(255).repeat_interleave(3, 0).repeat_interleave(3, 1);
  at::Tensor page = at::zeros({130, 110}, at::kFloat);
  page.narrow(0, 30, 84).narrow(1, 7, 84).copy_(big);
  return 0.95 - 0.85 * page;  // light paper (0.95), dark ink (0.1)
}

TEST(DigitPreparation, AnMnistDigitComesBackAsItself) {
  ASSERT_FALSE(mnist_dir().empty());
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  for (int64_t i = 0; i < 20; ++i) {
    const at::Tensor digit = test.images[i];
    // Light-on-dark, as MNIST stores it.
    EXPECT_GT(correlation(prepare_digit(digit.to(at::kFloat).div(255)), digit), 0.9) << "digit " << i;
    // Dark-on-light, larger, off-centre: inverted, shrunk, centred.
    EXPECT_GT(correlation(prepare_digit(paper_picture(digit)), digit), 0.85) << "paper digit " << i;
  }
}

TEST(DigitPreparation, InkIsFittedTo20PixelsAndCentredByMass) {
  at::Tensor picture = at::zeros({200, 100}, at::kFloat);
  picture.narrow(0, 10, 120).narrow(1, 70, 12).fill_(1);  // a tall bar near the right edge
  const at::Tensor d = prepare_digit(picture).to(at::kFloat);
  const at::Tensor rows = d.sum(1).nonzero().flatten(), cols = d.sum(0).nonzero().flatten();
  EXPECT_EQ(rows.max().item<int64_t>() - rows.min().item<int64_t>() + 1, 20);
  EXPECT_LE(cols.max().item<int64_t>() - cols.min().item<int64_t>() + 1, 4);
  const double cy = (d.sum(1) * at::arange(28)).sum().item<double>() / d.sum().item<double>();
  const double cx = (d.sum(0) * at::arange(28)).sum().item<double>() / d.sum().item<double>();
  EXPECT_NEAR(cy, 14, 0.6);
  EXPECT_NEAR(cx, 14, 0.6);
}

TEST(DigitPreparation, ABlankPictureIsAnError) {
  EXPECT_THROW(prepare_digit(at::full({40, 40}, 0.9)), Error);
  EXPECT_THROW(prepare_digit(at::zeros({40, 40})), Error);
}

TEST(ImageFile, ReadsPngAndJpegByContent) {
  TempDir dir;
  at::Tensor picture = at::zeros({30, 40}, at::kFloat);
  picture.narrow(0, 5, 20).narrow(1, 10, 5).fill_(1);
  write_png_gray(dir.file("a.png"), picture);
  const at::Tensor png = read_image_gray(dir.file("a.png"));
  EXPECT_EQ(png.sizes(), picture.sizes());
  EXPECT_TRUE(at::allclose(png, picture));

  write_jpeg(dir.file("a.photo"), picture.mul(255).to(at::kByte));  // name says nothing; content does
  const at::Tensor jpeg = read_image_gray(dir.file("a.photo"));
  EXPECT_EQ(jpeg.sizes(), picture.sizes());
  EXPECT_LT((jpeg - picture).abs().mean().item<double>(), 0.05);
}

// Big-endian 32-bit value at `at`.
void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + size_t(k)] = uint8_t(v >> (24 - 8 * k));
}

// read_image_gray(path) refuses the file in one Error whose message holds every fragment.
void expect_refused(const std::string& path, const std::vector<std::string>& fragments) {
  try {
    read_image_gray(path);
    ADD_FAILURE() << path << " was read";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(ImageFile, PicturesOverThePixelBudgetAreRefusedFromTheirHeader) {
  TempDir dir;
  // A real 10x10 PNG whose header then claims 30000 x 30000 (its checksum fixed): refused at once.
  write_png_gray(dir.file("small.png"), at::rand({10, 10}));
  std::vector<uint8_t> png = test_support::read_bytes(dir.file("small.png"));
  put_u32(png, 16, 30000);  // IHDR: width at 16, height at 20, its CRC over type + data at 29
  put_u32(png, 20, 30000);
  put_u32(png, 29, uint32_t(crc32(0, png.data() + 12, 17)));
  write_bytes(dir.file("huge.png"), png);
  // A JPEG whose frame header (SOF0: FF C0, length, precision, height, width) claims the same.
  write_jpeg(dir.file("small.jpg"), at::randint(0, 255, {10, 10}).to(at::kByte));
  std::vector<uint8_t> jpeg = test_support::read_bytes(dir.file("small.jpg"));
  size_t sof = 0;
  for (size_t i = 0; i + 1 < jpeg.size() && !sof; ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) sof = i;
  ASSERT_GT(sof, 0u);
  for (size_t k : {sof + 5, sof + 7}) {
    jpeg[k] = 30000 >> 8;
    jpeg[k + 1] = 30000 & 0xFF;
  }
  write_bytes(dir.file("huge.jpg"), jpeg);
  for (const char* name : {"huge.png", "huge.jpg"})
    expect_refused(dir.file(name), {name, "30000 x 30000 pixels (900 megapixels)"});
  // At the budget's edge a picture is read: 8000 x 8000 is 64 megapixels exactly.
  EXPECT_EQ(kMaxImagePixels, int64_t(8000) * 8000);
}

TEST(ImageFile, NonImagesAndDamagedFilesAreErrorsNamingTheFile) {
  TempDir dir;
  write_bytes(dir.file("notes.txt"), {'7', '\n'});
  expect_refused(dir.file("notes.txt"), {"notes.txt is not a PNG or JPEG image"});
  write_png_gray(dir.file("a.png"), at::rand({50, 50}));
  std::vector<uint8_t> bytes = test_support::read_bytes(dir.file("a.png"));
  bytes.resize(bytes.size() / 2);
  write_bytes(dir.file("half.png"), bytes);
  EXPECT_THROW(read_image_gray(dir.file("half.png")), Error);
  write_jpeg(dir.file("a.jpg"), at::randint(0, 255, {50, 50}).to(at::kByte));
  bytes = test_support::read_bytes(dir.file("a.jpg"));
  bytes.resize(bytes.size() / 3);
  write_bytes(dir.file("third.jpg"), bytes);
  // libjpeg pads a truncated scan with grey and only warns: that is not the user's picture.
  expect_refused(dir.file("third.jpg"), {"third.jpg is a truncated JPEG"});
  // Cut, then closed with an end-of-image marker: libjpeg warns only of a segment cut short
  // and would hand back a picture with its last rows grey.
  bytes = test_support::read_bytes(dir.file("a.jpg"));
  bytes.resize(bytes.size() * 2 / 3);
  bytes.insert(bytes.end(), {0xFF, 0xD9});
  write_bytes(dir.file("closed.jpg"), bytes);
  expect_refused(dir.file("closed.jpg"), {"closed.jpg is a damaged JPEG: Corrupt JPEG data"});
  bytes.resize(20);
  write_bytes(dir.file("header.jpg"), bytes);
  EXPECT_THROW(read_image_gray(dir.file("header.jpg")), Error);
  EXPECT_THROW(read_image_gray(dir.file("missing.png")), Error);
}

// A 16-bit PNG's levels are scaled linearly: 86 x 257 reads as 86 / 255, not through a gamma curve.
TEST(ImageFile, SixteenBitPngsScaleLinearly) {
  TempDir dir;
  std::vector<uint16_t> levels = {uint16_t(86 * 257), 0, 65535, uint16_t(200 * 257)};
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = 2;
  image.height = 2;
  image.format = PNG_FORMAT_LINEAR_Y;
  ASSERT_TRUE(png_image_write_to_file(&image, dir.file("deep.png").c_str(), 0, levels.data(), 0, nullptr));
  const at::Tensor grey = read_image_gray(dir.file("deep.png"));
  EXPECT_NEAR(grey[0][0].item<double>(), 86.0 / 255.0, 1e-4);
  EXPECT_NEAR(grey[0][1].item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(grey[1][0].item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(grey[1][1].item<double>(), 200.0 / 255.0, 1e-4);
}

TEST(ImageFile, CmykJpegsAreRefusedByName) {
  TempDir dir;
  jpeg_compress_struct info;
  jpeg_error_mgr error;
  info.err = jpeg_std_error(&error);
  jpeg_create_compress(&info);
  FILE* file = std::fopen(dir.file("print.jpg").c_str(), "wb");
  jpeg_stdio_dest(&info, file);
  info.image_width = 8;
  info.image_height = 8;
  info.input_components = 4;
  info.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&info);
  jpeg_start_compress(&info, TRUE);
  std::vector<uint8_t> row(8 * 4, 128);
  while (info.next_scanline < info.image_height) {
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&info, &r, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(file);
  expect_refused(dir.file("print.jpg"), {"print.jpg is a CMYK JPEG"});
}

// Bounded before a byte is read: a file over the size limit (sparse, so the test is cheap),
// a FIFO (whose read would block) and a device (whose read never ends) are refused by name.
TEST(ImageFile, OnlyRegularFilesUnderTheSizeLimitAreRead) {
  TempDir dir;
  write_png_gray(dir.file("padded.png"), at::rand({10, 10}));
  ASSERT_EQ(::truncate(dir.file("padded.png").c_str(), kMaxImageBytes + 1), 0);
  expect_refused(dir.file("padded.png"), {"padded.png is 64000001 bytes; pictures of up to 64 MB"});
  ASSERT_EQ(::mkfifo(dir.file("pipe.png").c_str(), 0600), 0);
  for (const std::string& path : {dir.file("pipe.png"), std::string("/dev/zero"), dir.path().string()})
    expect_refused(path, {path});
}

}  // namespace
}  // namespace translution
