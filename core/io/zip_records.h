#pragma once
// The records of a PyTorch archive (what torch.save and LibTorch's OutputArchive
// write: a zip whose records all lie under one folder), read from a ByteSource by a
// reader that bounds every size by the archive's before it reads: the central
// directory's, each record's, the count of records; records may not overlap. Only
// the directory is read at construction, and a record only when asked for, so a
// file that is no archive, or an archive that is damaged, is refused before its
// bulk is read. Only stored (uncompressed) records are read, as PyTorch writes its
// pickles and tensors; each is checked against its CRC-32. The TorchScript code an
// OutputArchive also holds (deflated) is never read.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace translution {

class ByteSource;

constexpr uint64_t kMaxZipRecords = 1000000;
// Room for kMaxZipRecords entries with names of PyTorch's length ("archive/data/123456").
constexpr uint64_t kMaxZipDirectoryBytes = uint64_t(256) << 20;

class ZipRecords {
 public:
  // Parses the central directory. Throws translution::Error naming the source where
  // it is missing, damaged, or lists a record outside the archive. `source` must
  // outlive this.
  explicit ZipRecords(const ByteSource& source);

  // `record` is relative to the archive's folder: "data.pkl", "data/0".
  bool has(const std::string& record) const { return entries_.count(prefix_ + record) > 0; }
  // Throws translution::Error where the record is missing, compressed or damaged, or
  // holds more than `max_bytes` (refused before any of it is read).
  std::vector<char> read(const std::string& record, uint64_t max_bytes = UINT64_MAX) const;

 private:
  struct Entry {
    uint64_t local_offset = 0, compressed = 0, size = 0;
    uint32_t crc = 0;
    uint16_t method = 0;
  };
  void find_directory(uint64_t* offset, uint64_t* bytes, uint64_t* count) const;
  void read_directory(uint64_t offset, uint64_t bytes, uint64_t count);
  void refuse_overlaps() const;

  const ByteSource& source_;
  uint64_t size_;
  std::string name_, prefix_;
  std::map<std::string, Entry> entries_;
};

}  // namespace translution
