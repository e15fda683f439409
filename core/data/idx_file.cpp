#include "data/idx_file.h"

#include <fstream>
#include <iterator>
#include <limits>

#include "util/error.h"

namespace translution {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr int kMaxDims = 4;  // MNIST uses 1 (labels) and 3 (images)

const char* type_name(uint8_t code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return "unknown";
  }
}

std::string hex_byte(uint8_t v) {
  static const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[v >> 4] + digits[v & 15];
}

uint32_t read_be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace

IdxArray parse_idx(const std::vector<uint8_t>& bytes, const std::string& name) {
  auto fail = [&](const std::string& why) { throw Error(name + ": " + why); };
  if (bytes.size() < 4)
    fail("not an IDX file: " + std::to_string(bytes.size()) + " bytes, shorter than the 4-byte magic number");
  if (bytes[0] != 0 || bytes[1] != 0)
    fail("not an IDX file: magic number does not start with two zero bytes");
  const uint8_t type = bytes[2];
  const int ndim = bytes[3];
  if (type != kUnsignedByte)
    fail("element type " + hex_byte(type) + " (" + type_name(type) +
         ") is not supported; MNIST files hold unsigned bytes (0x08)");
  if (ndim < 1 || ndim > kMaxDims)
    fail("magic number declares " + std::to_string(ndim) + " dimensions; expected 1 to " +
         std::to_string(kMaxDims));
  const size_t header = 4 + 4 * size_t(ndim);
  if (bytes.size() < header)
    fail("truncated header: " + std::to_string(bytes.size()) + " bytes, but " + std::to_string(ndim) +
         " dimensions need " + std::to_string(header));

  IdxArray out;
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    const uint32_t dim = read_be32(&bytes[4 + 4 * size_t(d)]);
    if (dim == 0) fail("dimension " + std::to_string(d) + " is zero");
    // Overflow-safe: a huge declared size must be reported, not wrapped around.
    if (count > std::numeric_limits<uint64_t>::max() / dim) fail("declared dimensions overflow");
    count *= dim;
    out.dims.push_back(dim);
  }
  const uint64_t payload = bytes.size() - header;
  if (payload != count) {
    std::string shape;
    for (auto d : out.dims) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    fail(std::string(payload < count ? "truncated" : "has trailing bytes") + ": header declares " + shape +
         " = " + std::to_string(count) + " elements, file holds " + std::to_string(payload));
  }
  out.data.assign(bytes.begin() + std::ptrdiff_t(header), bytes.end());
  return out;
}

IdxArray read_idx_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path + ": read error");
  return parse_idx(bytes, path);
}

}  // namespace translution
