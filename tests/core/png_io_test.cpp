#include "image/png_io.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "image/contact_sheet.h"
#include "temp_dir.h"
#include "util/error.h"

using namespace translution;
using namespace translution::test_support;

TEST(PngIo, WritesReproducibleGreyscalePng) {
  TempDir dir;
  const at::Tensor image = at::linspace(0, 1, 84 * 84).reshape({84, 84});
  write_png_gray(dir.file("a.png"), image);
  write_png_gray(dir.file("b.png"), image);
  const auto a = read_bytes(dir.file("a.png"));
  ASSERT_GT(a.size(), 33u);
  EXPECT_EQ(a, read_bytes(dir.file("b.png")));
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_TRUE(std::equal(signature, signature + 8, a.begin()));
  // IHDR: width and height big-endian at offsets 16 and 20, bit depth 8, colour type 0 (grey).
  EXPECT_EQ(a[19], 84);
  EXPECT_EQ(a[23], 84);
  EXPECT_EQ(a[24], 8);
  EXPECT_EQ(a[25], 0);
}

TEST(PngIo, UnwritableDestinationNamesThePathAndLeavesNothing) {
  TempDir dir;
  const std::string blocker = dir.file("file");
  write_bytes(blocker, {1, 2, 3});
  const std::string target = blocker + "/x.png";  // a directory that is a file
  try {
    write_png_gray(target, at::zeros({4, 4}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(blocker), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(blocker), (std::vector<uint8_t>{1, 2, 3}));
}

TEST(ContactSheet, TilesImagesWithSeparators) {
  std::vector<at::Tensor> images;
  for (int i = 0; i < 5; ++i) images.push_back(at::full({3, 4}, i / 10.0));
  const at::Tensor sheet = contact_sheet(images, 2, 3, 1);
  ASSERT_EQ(sheet.sizes(), (std::vector<int64_t>{7, 14}));
  EXPECT_FLOAT_EQ(sheet[0][0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(sheet[4][5].item<float>(), 0.4f);  // row 1, col 1 -> image 4
  EXPECT_FLOAT_EQ(sheet[3][0].item<float>(), 0.5f);  // separator
  EXPECT_THROW(contact_sheet(images, 2, 2), Error);
}
