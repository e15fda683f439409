#include "dist/store_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/byte_source.h"
#include "util/error.h"

namespace translution {
namespace {

// The file's bytes under a shared lock, so that a rank appending a record (FileStore writes
// under an exclusive one) is never seen half-way.
std::vector<char> locked_bytes(const std::string& path) {
  const FileBytes file(path);  // a regular file, or an Error naming the path
  if (file.size() > kMaxStoreFileBytes)
    throw Error(path + " has " + std::to_string(file.size()) +
                " bytes, more than a rendezvous file holds when a rank joins: not a rendezvous file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_SH) != 0 && errno == EINTR) {
  }
  struct stat st {};
  std::vector<char> bytes;
  if (::fstat(fd, &st) == 0 && uint64_t(st.st_size) <= kMaxStoreFileBytes) {
    bytes.resize(size_t(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, off_t(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += size_t(n);
    }
    bytes.resize(got);
  }
  ::close(fd);  // releases the lock
  return bytes;
}

}  // namespace

void check_store_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return;  // the first rank creates it
  const std::vector<char> bytes = locked_bytes(path);
  // Records come in pairs, key then value; each is a length and that many bytes.
  uint64_t at = 0, records = 0;
  bool whole = true;
  while (whole && at < bytes.size()) {
    uint32_t length = 0;  // c10d's FileStore writes 32-bit lengths
    whole = bytes.size() - at >= sizeof length;
    if (whole) std::memcpy(&length, bytes.data() + at, sizeof length);
    whole = whole && length <= bytes.size() - at - sizeof length;
    at += sizeof length + length;
    ++records;
  }
  if (!whole || records % 2 != 0)
    throw Error(path + " is not a rendezvous file: its " + std::to_string(bytes.size()) +
                " bytes are not c10d's records of keys and values (remove it, or name another path)");
}

}  // namespace translution
