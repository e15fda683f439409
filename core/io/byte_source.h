#pragma once
// The bytes of a file a user hands the program, read where a reader asks and never
// more: a reader learns the size first and bounds every read against it before it
// starts. A file is opened only when it is a regular file (never a FIFO, a device
// or a folder, whose reads could block or never end).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace translution {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Used in messages: the file's path, or what the bytes are.
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Exactly n bytes from `offset`; throws translution::Error naming the source where
  // the range is not inside it or the read fails.
  virtual void read(uint64_t offset, void* out, size_t n) const = 0;
};

// A regular file, opened at construction; throws translution::Error naming the path
// where it is missing, unreadable or not a regular file.
class FileBytes final : public ByteSource {
 public:
  explicit FileBytes(std::string path);
  ~FileBytes() override;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  const std::string& name() const override { return path_; }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* out, size_t n) const override;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Bytes already in memory, which must outlive it.
class MemoryBytes final : public ByteSource {
 public:
  MemoryBytes(const void* data, size_t size, std::string name)
      : data_(static_cast<const char*>(data)), size_(size), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* out, size_t n) const override;

 private:
  const char* data_;
  size_t size_;
  std::string name_;
};

// The bytes [offset, offset + size) of another source, which must outlive it and hold
// them (checked at construction); messages name the other source.
class SliceBytes final : public ByteSource {
 public:
  SliceBytes(const ByteSource& whole, uint64_t offset, uint64_t size);
  const std::string& name() const override { return whole_.name(); }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* out, size_t n) const override;

 private:
  const ByteSource& whole_;
  uint64_t offset_, size_;
};

// Throws translution::Error unless [offset, offset + n) lies inside a source of `size` bytes.
void require_range(const ByteSource& source, uint64_t offset, uint64_t n);

}  // namespace translution
