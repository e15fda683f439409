#include "io/zip_records.h"

#include <array>
#include <cstring>

#include "util/error.h"

namespace translution {
namespace {

uint64_t little(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | uint8_t(p[i]);
  return v;
}

uint32_t crc32(const char* data, uint64_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (uint64_t i = 0; i < size; ++i) c = table[(c ^ uint8_t(data[i])) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// The zip64 extra field's values, in the order the format gives them, for each 32-bit field that is
// saturated.
void apply_zip64(const char* extra, uint64_t bytes, uint64_t* fields[3]) {
  for (uint64_t at = 0; at + 4 <= bytes;) {
    const uint64_t id = little(extra + at, 2), length = little(extra + at + 2, 2);
    if (at + 4 + length > bytes) return;
    if (id == 1) {
      uint64_t used = 0;
      for (int i = 0; i < 3; ++i)
        if (*fields[i] == 0xFFFFFFFFu && used + 8 <= length) {
          *fields[i] = little(extra + at + 4 + used, 8);
          used += 8;
        }
      return;
    }
    at += 4 + length;
  }
}

}  // namespace

ZipRecords::ZipRecords(const char* data, size_t size, std::string name)
    : data_(data), size_(size), name_(std::move(name)) {
  // The end-of-central-directory record: 22 bytes, then a comment of up to 65,535.
  if (size_ < 22) throw Error(name_ + ": not a zip archive (too short)");
  uint64_t end = size_ - 22;
  const uint64_t lowest = size_ > 22 + 65535 ? size_ - 22 - 65535 : 0;
  while (std::memcmp(data_ + end, "PK\5\6", 4) != 0) {
    if (end == lowest) throw Error(name_ + ": not a zip archive (no end-of-directory record)");
    --end;
  }
  uint64_t count = little(data_ + end + 10, 2), bytes = little(data_ + end + 12, 4),
           offset = little(data_ + end + 16, 4);
  if ((count == 0xFFFF || bytes == 0xFFFFFFFFu || offset == 0xFFFFFFFFu) && end >= 20 &&
      std::memcmp(data_ + end - 20, "PK\6\7", 4) == 0) {  // zip64: the locator points at the larger record
    const uint64_t at = little(data_ + end - 20 + 8, 8);
    if (at > size_ || size_ - at < 56 || std::memcmp(data_ + at, "PK\6\6", 4) != 0)
      throw Error(name_ + ": its zip64 directory record is damaged");
    count = little(data_ + at + 32, 8);
    bytes = little(data_ + at + 40, 8);
    offset = little(data_ + at + 48, 8);
  }
  if (count > kMaxZipRecords)
    throw Error(name_ + ": the archive lists " + std::to_string(count) +
                " records, more than this reader's limit");
  if (offset > size_ || bytes > size_ - offset)
    throw Error(name_ + ": its zip directory lies outside the archive");
  read_directory(offset, bytes, count);
}

void ZipRecords::read_directory(uint64_t offset, uint64_t bytes, uint64_t count) {
  uint64_t at = offset;
  const uint64_t end = offset + bytes;
  for (uint64_t i = 0; i < count; ++i) {
    if (end - at < 46 || std::memcmp(data_ + at, "PK\1\2", 4) != 0)
      throw Error(name_ + ": its zip directory is damaged");
    Entry e;
    e.method = uint16_t(little(data_ + at + 10, 2));
    e.crc = uint32_t(little(data_ + at + 16, 4));
    e.compressed = little(data_ + at + 20, 4);
    e.size = little(data_ + at + 24, 4);
    e.local_offset = little(data_ + at + 42, 4);
    const uint64_t name_bytes = little(data_ + at + 28, 2), extra = little(data_ + at + 30, 2),
                   comment = little(data_ + at + 32, 2);
    if (end - at - 46 < name_bytes + extra + comment) throw Error(name_ + ": its zip directory is damaged");
    uint64_t* fields[3] = {&e.size, &e.compressed, &e.local_offset};
    apply_zip64(data_ + at + 46 + name_bytes, extra, fields);
    const std::string record(data_ + at + 46, name_bytes);
    if (i == 0) prefix_ = record.substr(0, record.find('/') + 1);
    if (e.local_offset > size_ || e.compressed > size_ - e.local_offset)
      throw Error(name_ + ": record " + record + " lies outside the archive");
    entries_[record] = e;
    at += 46 + name_bytes + extra + comment;
  }
}

std::vector<char> ZipRecords::read(const std::string& record) const {
  const auto it = entries_.find(prefix_ + record);
  if (it == entries_.end()) throw Error(name_ + ": the archive has no " + record);
  const Entry& e = it->second;
  if (e.method != 0 || e.compressed != e.size)
    throw Error(name_ + ": record " + record +
                " is compressed; PyTorch stores its pickles and tensors uncompressed");
  const uint64_t at = e.local_offset;
  if (size_ - at < 30 || std::memcmp(data_ + at, "PK\3\4", 4) != 0)
    throw Error(name_ + ": record " + record + " is damaged");
  const uint64_t start = at + 30 + little(data_ + at + 26, 2) + little(data_ + at + 28, 2);
  if (start > size_ || e.size > size_ - start)
    throw Error(name_ + ": record " + record + " runs past the archive's end");
  if (crc32(data_ + start, e.size) != e.crc)
    throw Error(name_ + ": record " + record + " is damaged (its CRC-32 differs)");
  return std::vector<char>(data_ + start, data_ + start + e.size);
}

}  // namespace translution
