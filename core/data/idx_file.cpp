#include "data/idx_file.h"

#include <algorithm>
#include <limits>

#include "io/byte_source.h"
#include "util/error.h"

namespace translution {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr int kMaxDims = 4;  // MNIST uses 1 (labels) and 3 (images)
constexpr uint64_t kMaxElements = uint64_t(1) << 30;

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

// The header is read and checked first; the elements are read only when the file's size is
// exactly what the header declares, so a file cannot make the reader allocate more than it holds.
IdxArray read_idx(const ByteSource& source) {
  const std::string& name = source.name();
  auto fail = [&](const std::string& why) { throw Error(name + ": " + why); };
  const uint64_t size = source.size();
  if (size < 4)
    fail("not an IDX file: " + std::to_string(size) + " bytes, shorter than the 4-byte magic number");
  uint8_t head[4 + 4 * kMaxDims];
  source.read(0, head, size_t(std::min<uint64_t>(size, sizeof head)));
  if (head[0] != 0 || head[1] != 0) fail("not an IDX file: magic number does not start with two zero bytes");
  const uint8_t type = head[2];
  const int ndim = head[3];
  if (type != kUnsignedByte)
    fail("element type " + hex_byte(type) + " (" + type_name(type) +
         ") is not supported; MNIST files hold unsigned bytes (0x08)");
  if (ndim < 1 || ndim > kMaxDims)
    fail("magic number declares " + std::to_string(ndim) + " dimensions; expected 1 to " +
         std::to_string(kMaxDims));
  const size_t header = 4 + 4 * size_t(ndim);
  if (size < header)
    fail("truncated header: " + std::to_string(size) + " bytes, but " + std::to_string(ndim) +
         " dimensions need " + std::to_string(header));

  IdxArray out;
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    const uint32_t dim = read_be32(&head[4 + 4 * size_t(d)]);
    if (dim == 0) fail("dimension " + std::to_string(d) + " is zero");
    // Overflow-safe: a huge declared size must be reported, not wrapped around.
    if (count > std::numeric_limits<uint64_t>::max() / dim) fail("declared dimensions overflow");
    count *= dim;
    out.dims.push_back(dim);
  }
  const uint64_t payload = size - header;
  if (payload != count) {
    std::string shape;
    for (auto d : out.dims) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    fail(std::string(payload < count ? "truncated" : "has trailing bytes") + ": header declares " + shape +
         " = " + std::to_string(count) + " elements, file holds " + std::to_string(payload));
  }
  if (count > kMaxElements)
    fail("holds " + std::to_string(count) + " elements, more than the " + std::to_string(kMaxElements) +
         " an IDX file may hold here (MNIST's largest holds 47 million)");
  out.data.resize(size_t(count));
  source.read(header, out.data.data(), out.data.size());
  return out;
}

IdxArray parse_idx(const std::vector<uint8_t>& bytes, const std::string& name) {
  return read_idx(MemoryBytes(bytes.data(), bytes.size(), name));
}

IdxArray read_idx_file(const std::string& path) { return read_idx(FileBytes(path)); }

}  // namespace translution
