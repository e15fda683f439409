#include "data/idx_file.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "data/mnist.h"
#include "temp_dir.h"
#include "util/error.h"

using namespace translution;
using namespace translution::test_support;

namespace {

// Expects read_idx_file to throw an Error naming the file and containing `fragment`.
void expect_idx_error(const std::string& path, const std::string& fragment) {
  try {
    read_idx_file(path);
    FAIL() << "no error for " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "error should be one line: " << message;
  }
}

std::vector<uint8_t> valid_images(uint32_t n, uint32_t rows = 28, uint32_t cols = 28) {
  auto bytes = idx_header({n, rows, cols});
  for (uint32_t i = 0; i < n * rows * cols; ++i) bytes.push_back(uint8_t(i * 7));
  return bytes;
}

std::vector<uint8_t> valid_labels(uint32_t n) {
  auto bytes = idx_header({n});
  for (uint32_t i = 0; i < n; ++i) bytes.push_back(uint8_t(i % 10));
  return bytes;
}

}  // namespace

TEST(IdxFile, ReadsValidFile) {
  TempDir dir;
  write_bytes(dir.file("images"), valid_images(3, 2, 4));
  const IdxArray a = read_idx_file(dir.file("images"));
  ASSERT_EQ(a.dims, (std::vector<int64_t>{3, 2, 4}));
  ASSERT_EQ(a.data.size(), 24u);
  EXPECT_EQ(a.data[5], uint8_t(35));
}

TEST(IdxFile, RejectsMissingFile) { expect_idx_error("/nonexistent/dir/file-idx3-ubyte", "cannot open"); }

// What is not a regular file is refused before a byte is read: a FIFO would block, a
// device or a link to one would never end.
TEST(IdxFile, RejectsWhatIsNotARegularFileWithoutReading) {
  TempDir dir;
  const std::string fifo = dir.file("fifo-idx3-ubyte"), zero = dir.file("zero-idx3-ubyte");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", zero);
  expect_idx_error(fifo, "is not a regular file");
  expect_idx_error(zero, "is not a regular file");
  expect_idx_error(dir.path().string(), "is not a regular file");
}

TEST(IdxFile, RejectsWrongMagic) {
  TempDir dir;
  auto bytes = valid_images(2);
  bytes[0] = 0x1f;  // e.g. a gzip file given by mistake
  write_bytes(dir.file("gz"), bytes);
  expect_idx_error(dir.file("gz"), "magic number");
}

TEST(IdxFile, RejectsEmptyFile) {
  TempDir dir;
  write_bytes(dir.file("empty"), {});
  expect_idx_error(dir.file("empty"), "shorter than");
}

TEST(IdxFile, RejectsUnsupportedElementType) {
  TempDir dir;
  auto bytes = idx_header({4}, 0x0D);
  bytes.resize(bytes.size() + 16);
  write_bytes(dir.file("floats"), bytes);
  expect_idx_error(dir.file("floats"), "0x0D (float)");
}

TEST(IdxFile, RejectsBadDimensionCount) {
  TempDir dir;
  write_bytes(dir.file("dims"), {0, 0, 8, 9, 0, 0, 0, 1});
  expect_idx_error(dir.file("dims"), "9 dimensions");
}

TEST(IdxFile, RejectsTruncatedHeader) {
  TempDir dir;
  auto bytes = idx_header({10, 28, 28});
  bytes.resize(9);
  write_bytes(dir.file("header"), bytes);
  expect_idx_error(dir.file("header"), "truncated header");
}

TEST(IdxFile, RejectsTruncatedData) {
  TempDir dir;
  auto bytes = valid_images(5);
  bytes.resize(bytes.size() - 100);
  write_bytes(dir.file("short"), bytes);
  expect_idx_error(dir.file("short"), "truncated");
}

TEST(IdxFile, RejectsTrailingBytes) {
  TempDir dir;
  auto bytes = valid_labels(5);
  bytes.push_back(1);
  write_bytes(dir.file("long"), bytes);
  expect_idx_error(dir.file("long"), "trailing bytes");
}

TEST(IdxFile, RejectsHugeDeclaredDimensionsWithoutAllocating) {
  TempDir dir;
  auto bytes = idx_header({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu});
  bytes.resize(bytes.size() + 64);
  write_bytes(dir.file("huge"), bytes);
  expect_idx_error(dir.file("huge"), "overflow");
  auto big = idx_header({4000000000u, 28, 28});
  write_bytes(dir.file("big"), big);
  expect_idx_error(dir.file("big"), "truncated");
}

TEST(IdxFile, RejectsZeroDimension) {
  TempDir dir;
  write_bytes(dir.file("zero"), idx_header({0}));
  expect_idx_error(dir.file("zero"), "zero");
}

TEST(MnistFiles, RejectsLabelOutOfRange) {
  TempDir dir;
  write_bytes(dir.file("images"), valid_images(4));
  auto labels = valid_labels(4);
  labels.back() = 11;
  write_bytes(dir.file("labels"), labels);
  try {
    load_mnist_files(dir.file("images"), dir.file("labels"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("labels")), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("label 11 at index 3"), std::string::npos) << e.what();
  }
}

TEST(MnistFiles, RejectsCountMismatch) {
  TempDir dir;
  write_bytes(dir.file("images"), valid_images(4));
  write_bytes(dir.file("labels"), valid_labels(5));
  try {
    load_mnist_files(dir.file("images"), dir.file("labels"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 labels but"), std::string::npos) << e.what();
  }
}

TEST(MnistFiles, RejectsLabelsGivenAsImages) {
  TempDir dir;
  write_bytes(dir.file("labels"), valid_labels(4));
  EXPECT_THROW(load_mnist_files(dir.file("labels"), dir.file("labels")), Error);
}

TEST(MnistFiles, LoadsValidPair) {
  TempDir dir;
  write_bytes(dir.file("images"), valid_images(4));
  write_bytes(dir.file("labels"), valid_labels(4));
  const MnistDigits d = load_mnist_files(dir.file("images"), dir.file("labels"));
  EXPECT_EQ(d.size(), 4);
  EXPECT_EQ(d.images.sizes(), (std::vector<int64_t>{4, 28, 28}));
  EXPECT_EQ(d.labels[3].item<int64_t>(), 3);
}
