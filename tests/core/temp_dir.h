#pragma once
// A fresh directory per test, removed afterwards.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace translution::test_support {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "translution-test-XXXXXX").string();
    const char* made = ::mkdtemp(pattern.data());
    const int error = errno;
    if (!made)
      throw std::runtime_error("cannot create a directory from " + pattern + ": " + std::strerror(error));
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// An IDX header for unsigned bytes with the given dimensions.
inline std::vector<uint8_t> idx_header(const std::vector<uint32_t>& dims, uint8_t type = 0x08) {
  std::vector<uint8_t> bytes{0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(uint8_t(d >> shift));
  return bytes;
}

// Directory with the real MNIST files (set by ctest); empty when not configured.
inline std::string mnist_dir() {
  const char* env = std::getenv("TRANSLUTION_DATA");
  return env ? env : "";
}

}  // namespace translution::test_support
