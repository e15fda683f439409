#include "util/atomic_file.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/output_path.h"
#include "util/pending_temporary.h"

namespace translution {
namespace fs = std::filesystem;

namespace {
// The permissions a new file at `path` takes: those of the file it replaces (a private file
// stays private, a shared one shared), or those a plain new file would get.
void take_permissions(int fd, const std::string& path) {
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0) {
    ::fchmod(fd, existing.st_mode & 07777);
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
  }
}

// A name beside `path` that nothing holds: path.tmp-XXXXXX, as mkstemp spells it.
std::string unused_temporary_name(const std::string& path) {
  static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device device;
  std::mt19937 pick(device());
  std::string name = path + ".tmp-XXXXXX";
  for (size_t i = name.size() - 6; i < name.size(); ++i) name[i] = letters[pick() % (sizeof letters - 1)];
  return name;
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Flushes a file's (or a directory's) data to the disk: after a crash or power
// loss the rename must not point at an empty file, nor the directory forget it.
void sync_to_disk(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw Error(path + ": cannot open to flush it to disk: " + std::strerror(errno));
  const int result = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  // Some filesystems cannot sync a directory (EINVAL); the file itself is on disk by then.
  if (result != 0 && !(directory && saved == EINVAL))
    throw Error(path + ": cannot flush to disk: " + std::strerror(saved));
}
// A write that was killed leaves its temporary file behind; the next write of the same
// file removes those over an hour old (a younger one may belong to a write in progress),
// matching only the exact name mkstemp gave them, and only regular files.
void remove_stale_temporaries(const std::string& path) {
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& entry : fs::directory_iterator(folder_of(path), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code entry_ec;
    if (entry.is_regular_file(entry_ec) && !entry.is_symlink(entry_ec) &&
        entry.last_write_time(entry_ec) < cutoff)
      fs::remove(entry.path(), entry_ec);
  }
}

// An error raised while writing a temporary, told of the file the user named: the
// temporary is gone by the time the message is read.
Error naming_path(const Error& e, const std::string& temp, const std::string& path) {
  std::string message = e.what();
  for (size_t at = message.find(temp); at != std::string::npos; at = message.find(temp, at + path.size()))
    message.replace(at, temp.size(), path);
  return Error(message);
}

// One file on its way: written first where no reader looks, then renamed into place.
//
// Where the filesystem allows (ext4, xfs, btrfs, tmpfs), the content goes to a file with no
// name (O_TMPFILE) that the writer reaches as /proc/self/fd/N: a process killed meanwhile,
// even by SIGKILL or the out-of-memory killer, leaves nothing behind. It is given a name
// only once it is complete, for the instant before the rename. Elsewhere it is a named
// temporary beside the destination (mkstemp), which a terminating signal removes.
class StagedFile {
 public:
  explicit StagedFile(const std::string& path) : path_(checked_output_path(path)) {
    remove_stale_temporaries(path_);
    fd_ = ::open(folder_of(path_).c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ >= 0) {
      written_ = "/proc/self/fd/" + std::to_string(fd_);
      struct stat through_proc {};
      if (::stat(written_.c_str(), &through_proc) == 0) {
        take_permissions(fd_, path_);
        return;
      }
      ::close(fd_);  // no /proc to reach it through: a named file instead
      fd_ = -1;
    }
    std::string pattern = path_ + ".tmp-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw Error(path_ + ": cannot create a temporary file next to it: " + std::strerror(errno));
    take_permissions(fd, path_);
    ::close(fd);
    name(pattern);
    written_ = pattern;
  }
  ~StagedFile() {
    if (!temp_.empty()) std::remove(temp_.c_str());
    if (fd_ >= 0) ::close(fd_);
  }
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& written() const { return written_; }  // what the writer writes to

  // Flushes the complete file to the disk and, if it has none, gives it a name beside the
  // destination, ready to be renamed.
  void complete() {
    if (fd_ < 0) return sync_to_disk(written_, false);
    if (::fsync(fd_) != 0) throw Error(path_ + ": cannot flush to disk: " + std::strerror(errno));
    for (int attempt = 0;; ++attempt) {
      const std::string temp = unused_temporary_name(path_);
      name(temp);
      if (::linkat(AT_FDCWD, written_.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) break;
      const int error = errno;
      temp_.clear();
      pending_.reset();
      if (error != EEXIST || attempt == 100)
        throw Error(path_ + ": cannot name the finished temporary file: " + std::strerror(error));
    }
    ::close(fd_);
    fd_ = -1;
  }
  // Renames the completed file over the destination.
  void install() {
    if (std::rename(temp_.c_str(), path_.c_str()) != 0)
      throw Error(path_ + ": cannot rename temporary file into place: " + std::strerror(errno));
    temp_.clear();
    pending_.reset();
  }

 private:
  void name(const std::string& temp) {
    temp_ = temp;
    pending_ = std::make_unique<PendingTemporary>(temp);  // a terminating signal removes it
  }

  std::string path_;     // where the file goes (a link resolved to its target)
  std::string written_;  // /proc/self/fd/N of the unnamed file, or the named temporary
  std::string temp_;     // its name beside the destination while it has one; removed unless installed
  int fd_ = -1;          // the unnamed file, open until it is named
  std::unique_ptr<PendingTemporary> pending_;
};

}  // namespace

void write_files_atomically(const std::vector<AtomicWrite>& files) {
  std::vector<std::unique_ptr<StagedFile>> staged;
  staged.reserve(files.size());
  for (const AtomicWrite& f : files) staged.push_back(std::make_unique<StagedFile>(f.path));
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      files[i].write(staged[i]->written());
    } catch (const Error& e) {
      throw naming_path(e, staged[i]->written(), staged[i]->path());
    }
    staged[i]->complete();
  }
  // Every file is complete on disk: renames take no space and, within a folder, do not fail
  // for want of it; a file already renamed stays when a later one cannot be.
  for (const auto& s : staged) s->install();
  for (const auto& s : staged) sync_to_disk(folder_of(s->path()), true);
}

void write_file_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  write_files_atomically({{path, write}});
}

void install_file_atomically(const std::string& source, const std::string& destination) {
  write_file_atomically(destination, [&](const std::string& temp) {
    std::error_code ec;
    fs::copy_file(source, temp, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error(destination + ": cannot copy from " + source + ": " + ec.message());
  });
}

}  // namespace translution
