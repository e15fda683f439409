#pragma once
// MD5 (RFC 1321), only to verify downloaded data files against published sums.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace translution {

class Md5 {
 public:
  Md5();
  void update(const void* data, size_t size);
  std::string hex_digest();  // finishes the hash; call once

 private:
  void process_block(const uint8_t* block);
  std::array<uint32_t, 4> state_;
  std::array<uint8_t, 64> buffer_{};
  uint64_t total_bytes_ = 0;
};

std::string md5_hex(const void* data, size_t size);
// Hashes a file in chunks; throws translution::Error naming the file if unreadable.
std::string md5_file(const std::string& path);

}  // namespace translution
