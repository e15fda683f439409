#include "train/checkpoint_peek.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <memory>

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

namespace translution {
namespace {

// The archive inside a checkpoint file: the bytes after its header line, read
// where the zip reader asks (its directory, then one record), never all of them.
class ArchiveInFile : public caffe2::serialize::ReadAdapterInterface {
 public:
  ArchiveInFile(int fd, uint64_t offset, uint64_t size) : fd_(fd), offset_(offset), size_(size) {}
  ~ArchiveInFile() override { ::close(fd_); }
  size_t size() const override { return size_t(size_); }
  size_t read(uint64_t pos, void* buf, size_t n, const char*) const override {
    const ssize_t got = ::pread(fd_, buf, n, off_t(offset_ + pos));
    return got < 0 ? 0 : size_t(got);
  }

 private:
  int fd_;
  uint64_t offset_, size_;
};

// The string value of a module attribute in a TorchScript pickle, written by
// LibTorch's Pickler as BINUNICODE key, a memo op (BINPUT or LONG_BINPUT), then
// BINUNICODE value (the same in LibTorch 1.13 and 2.x). "" where it is absent.
std::string pickled_string(const std::string& pickle, const std::string& key) {
  const auto u32 = [](const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;  // little-endian, as the pickle format and every supported machine
  };
  std::string marker = "X    " + key;
  const uint32_t length = uint32_t(key.size());
  std::memcpy(&marker[1], &length, 4);
  size_t at = pickle.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  if (at < pickle.size() && pickle[at] == 'q') at += 2;        // BINPUT, one-byte memo id
  else if (at < pickle.size() && pickle[at] == 'r') at += 5;   // LONG_BINPUT, four-byte memo id
  if (at + 5 > pickle.size() || pickle[at] != 'X') return "";
  const uint32_t size = u32(&pickle[at + 1]);
  if (at + 5 + size > pickle.size()) return "";
  return pickle.substr(at + 5, size);
}

// The header line's length, after checking it is a checkpoint's; 0 where not.
uint64_t header_length(int fd) {
  char head[256] = {0};
  const ssize_t got = ::pread(fd, head, sizeof head - 1, 0);
  const char* newline = got > 0 ? static_cast<const char*>(std::memchr(head, '\n', size_t(got))) : nullptr;
  if (!newline || std::strncmp(head, "translution-checkpoint ", 23) != 0) return 0;
  return uint64_t(newline - head) + 1;
}

}  // namespace

std::optional<CheckpointPeek> peek_checkpoint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const off_t end = ::lseek(fd, 0, SEEK_END);
  const uint64_t header = header_length(fd);
  if (header == 0 || end <= off_t(header)) {
    ::close(fd);
    return std::nullopt;
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<ArchiveInFile>(fd, header, uint64_t(end) - header));
    const auto [data, size] = reader.getRecord("data.pkl");
    const std::string pickle(static_cast<const char*>(data.get()), size);
    const std::string config = pickled_string(pickle, "config");
    if (config.empty()) return std::nullopt;
    CheckpointPeek peek;
    peek.config = ViTConfig::from_text(config);
    if (const std::string train = pickled_string(pickle, "train_config"); !train.empty())
      peek.training = TrainConfig::from_text(train);
    peek.file_bytes = int64_t(end);
    return peek;
  } catch (const std::exception&) {  // not readable this way: the full load reports why
    return std::nullopt;
  }
}

}  // namespace translution
