#include "io/zip_records.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "io/byte_source.h"
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

ZipRecords::ZipRecords(const ByteSource& source)
    : source_(source), size_(source.size()), name_(source.name()) {
  uint64_t offset = 0, bytes = 0, count = 0;
  find_directory(&offset, &bytes, &count);
  if (count > kMaxZipRecords)
    throw Error(name_ + ": the archive lists " + std::to_string(count) +
                " records, more than this reader's limit");
  if (offset > size_ || bytes > size_ - offset)
    throw Error(name_ + ": its zip directory lies outside the archive");
  if (bytes > kMaxZipDirectoryBytes)
    throw Error(name_ + ": its zip directory has " + std::to_string(bytes) +
                " bytes, more than this reader's limit");
  read_directory(offset, bytes, count);
}

// Reads the end-of-central-directory record (and its zip64 form) from the archive's tail.
void ZipRecords::find_directory(uint64_t* offset, uint64_t* bytes, uint64_t* count) const {
  // The end-of-central-directory record: 22 bytes, then a comment of up to 65,535.
  if (size_ < 22) throw Error(name_ + ": not a zip archive (too short)");
  const uint64_t tail_start = size_ > 22 + 65535 + 20 ? size_ - 22 - 65535 - 20 : 0;
  std::vector<char> tail(size_t(size_ - tail_start));
  source_.read(tail_start, tail.data(), tail.size());
  const char* data = tail.data();
  uint64_t end = tail.size() - 22;
  const uint64_t lowest = tail.size() > 22 + 65535 ? tail.size() - 22 - 65535 : 0;
  while (std::memcmp(data + end, "PK\5\6", 4) != 0) {
    if (end == lowest) throw Error(name_ + ": not a zip archive (no end-of-directory record)");
    --end;
  }
  *count = little(data + end + 10, 2);
  *bytes = little(data + end + 12, 4);
  *offset = little(data + end + 16, 4);
  if ((*count == 0xFFFF || *bytes == 0xFFFFFFFFu || *offset == 0xFFFFFFFFu) && end >= 20 &&
      std::memcmp(data + end - 20, "PK\6\7", 4) == 0) {  // zip64: the locator points at the larger record
    const uint64_t at = little(data + end - 20 + 8, 8);
    char record[56];
    if (at > size_ || size_ - at < 56) throw Error(name_ + ": its zip64 directory record is damaged");
    source_.read(at, record, sizeof record);
    if (std::memcmp(record, "PK\6\6", 4) != 0) throw Error(name_ + ": its zip64 directory record is damaged");
    *count = little(record + 32, 8);
    *bytes = little(record + 40, 8);
    *offset = little(record + 48, 8);
  }
}

void ZipRecords::read_directory(uint64_t offset, uint64_t bytes, uint64_t count) {
  std::vector<char> directory(static_cast<size_t>(bytes));
  source_.read(offset, directory.data(), directory.size());
  const char* data = directory.data();
  uint64_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (bytes - at < 46 || std::memcmp(data + at, "PK\1\2", 4) != 0)
      throw Error(name_ + ": its zip directory is damaged");
    Entry e;
    e.method = uint16_t(little(data + at + 10, 2));
    e.crc = uint32_t(little(data + at + 16, 4));
    e.compressed = little(data + at + 20, 4);
    e.size = little(data + at + 24, 4);
    e.local_offset = little(data + at + 42, 4);
    const uint64_t name_bytes = little(data + at + 28, 2), extra = little(data + at + 30, 2),
                   comment = little(data + at + 32, 2);
    if (bytes - at - 46 < name_bytes + extra + comment) throw Error(name_ + ": its zip directory is damaged");
    uint64_t* fields[3] = {&e.size, &e.compressed, &e.local_offset};
    apply_zip64(data + at + 46 + name_bytes, extra, fields);
    const std::string record(data + at + 46, name_bytes);
    if (i == 0) prefix_ = record.substr(0, record.find('/') + 1);
    if (e.local_offset > size_ || e.compressed > size_ - e.local_offset)
      throw Error(name_ + ": record " + record + " lies outside the archive");
    entries_[record] = e;
    at += 46 + name_bytes + extra + comment;
  }
  refuse_overlaps();
}

// Records of an archive lie one after another. Many entries naming one record's bytes would
// each be read and kept as storage of its own: a small file could ask for gigabytes.
void ZipRecords::refuse_overlaps() const {
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // [start, end) of each record's header and data
  spans.reserve(entries_.size());
  for (const auto& [record, e] : entries_) spans.emplace_back(e.local_offset, e.local_offset + e.compressed);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second || spans[i].first == spans[i - 1].first)
      throw Error(name_ + ": its zip directory lists records that overlap");
}

std::vector<char> ZipRecords::read(const std::string& record, uint64_t max_bytes) const {
  const auto it = entries_.find(prefix_ + record);
  if (it == entries_.end()) throw Error(name_ + ": the archive has no " + record);
  const Entry& e = it->second;
  if (e.size > max_bytes)
    throw Error(name_ + ": record " + record + " holds " + std::to_string(e.size) + " bytes, more than the " +
                std::to_string(max_bytes) + " this reader takes for it");
  if (e.method != 0 || e.compressed != e.size)
    throw Error(name_ + ": record " + record +
                " is compressed; PyTorch stores its pickles and tensors uncompressed");
  const uint64_t at = e.local_offset;
  char header[30];
  if (size_ - at < 30) throw Error(name_ + ": record " + record + " is damaged");
  source_.read(at, header, sizeof header);
  if (std::memcmp(header, "PK\3\4", 4) != 0) throw Error(name_ + ": record " + record + " is damaged");
  const uint64_t start = at + 30 + little(header + 26, 2) + little(header + 28, 2);
  if (start > size_ || e.size > size_ - start)
    throw Error(name_ + ": record " + record + " runs past the archive's end");
  std::vector<char> out(size_t(e.size));
  source_.read(start, out.data(), out.size());
  if (crc32(out.data(), e.size) != e.crc)
    throw Error(name_ + ": record " + record + " is damaged (its CRC-32 differs)");
  return out;
}

}  // namespace translution
