#include "io/byte_source.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

namespace translution {

void require_range(const ByteSource& source, uint64_t offset, uint64_t n) {
  if (offset > source.size() || n > source.size() - offset)
    throw Error(source.name() + " is truncated: it has " + std::to_string(source.size()) + " bytes, and " +
                std::to_string(n) + " are needed from byte " + std::to_string(offset));
}

FileBytes::FileBytes(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("a file name is empty: name the file to read");
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw Error("cannot open " + path_ + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw Error(path_ + " is not a regular file");
  }
  size_ = uint64_t(st.st_size);
}

FileBytes::~FileBytes() { ::close(fd_); }

void FileBytes::read(uint64_t offset, void* out, size_t n) const {
  require_range(*this, offset, n);
  char* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw Error("cannot read " + path_ +
                  (got < 0 ? std::string(": ") + std::strerror(errno) : " (it shrank while being read)"));
    p += got;
    n -= size_t(got);
    offset += uint64_t(got);
  }
}

void MemoryBytes::read(uint64_t offset, void* out, size_t n) const {
  require_range(*this, offset, n);
  if (n) std::memcpy(out, data_ + offset, n);
}

SliceBytes::SliceBytes(const ByteSource& whole, uint64_t offset, uint64_t size)
    : whole_(whole), offset_(offset), size_(size) {
  require_range(whole, offset, size);
}

void SliceBytes::read(uint64_t offset, void* out, size_t n) const {
  require_range(*this, offset, n);
  whole_.read(offset_ + offset, out, n);
}

}  // namespace translution
