#include "util/md5.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "util/error.h"

namespace translution {
namespace {

constexpr uint32_t kShift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// K[i] = floor(2^32 * |sin(i + 1)|), as the RFC defines it.
const std::array<uint32_t, 64>& sine_table() {
  static const std::array<uint32_t, 64> table = [] {
    std::array<uint32_t, 64> t{};
    for (int i = 0; i < 64; ++i)
      t[i] = static_cast<uint32_t>(std::floor(std::fabs(std::sin(i + 1.0)) * 4294967296.0));
    return t;
  }();
  return table;
}

uint32_t rotate_left(uint32_t x, uint32_t c) { return (x << c) | (x >> (32 - c)); }

}  // namespace

Md5::Md5() : state_{0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u} {}

void Md5::process_block(const uint8_t* block) {
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = uint32_t(block[4 * i]) | uint32_t(block[4 * i + 1]) << 8 | uint32_t(block[4 * i + 2]) << 16 |
           uint32_t(block[4 * i + 3]) << 24;
  const auto& k = sine_table();
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  for (int i = 0; i < 64; ++i) {
    uint32_t f;
    int g;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) % 16;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) % 16;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) % 16;
    }
    const uint32_t next = b + rotate_left(a + f + k[i] + m[g], kShift[i]);
    a = d;
    d = c;
    c = b;
    b = next;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
}

void Md5::update(const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t used = total_bytes_ % 64;
  total_bytes_ += size;
  if (used > 0) {
    const size_t take = std::min(size, 64 - used);
    std::memcpy(buffer_.data() + used, bytes, take);
    bytes += take;
    size -= take;
    if (used + take < 64) return;
    process_block(buffer_.data());
  }
  for (; size >= 64; bytes += 64, size -= 64) process_block(bytes);
  std::memcpy(buffer_.data(), bytes, size);
}

std::string Md5::hex_digest() {
  const uint64_t bit_length = total_bytes_ * 8;
  const uint8_t pad_start = 0x80;
  update(&pad_start, 1);
  const uint8_t zero = 0;
  while (total_bytes_ % 64 != 56) update(&zero, 1);
  uint8_t length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = uint8_t(bit_length >> (8 * i));
  update(length_bytes, 8);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint32_t word : state_)
    for (int i = 0; i < 4; ++i) {
      const uint8_t byte = uint8_t(word >> (8 * i));
      out += hex[byte >> 4];
      out += hex[byte & 15];
    }
  return out;
}

std::string md5_hex(const void* data, size_t size) {
  Md5 md5;
  md5.update(data, size);
  return md5.hex_digest();
}

std::string md5_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  Md5 md5;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), std::streamsize(chunk.size()));
    md5.update(chunk.data(), size_t(in.gcount()));
  }
  if (in.bad()) throw Error(path + ": read error");
  return md5.hex_digest();
}

}  // namespace translution
