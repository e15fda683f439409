#include "util/atomic_file.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/output_path.h"
#include "util/pending_temporary.h"

namespace translution {
namespace fs = std::filesystem;

namespace {
// mkstemp makes the file private (0600); give it the permissions of the file it replaces (a
// private file stays private, a shared one shared), or those a plain new file would get.
std::string make_temp_name(const std::string& path) {
  std::string pattern = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) throw Error(path + ": cannot create a temporary file next to it: " + std::strerror(errno));
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0) {
    ::fchmod(fd, existing.st_mode & 07777);
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
  }
  ::close(fd);
  return pattern;
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
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
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

struct Staged {
  std::string path;                           // where the file goes (a link resolved to its target)
  std::string temp;                           // where it is written first
  std::unique_ptr<PendingTemporary> pending;  // removed if the process is terminated meanwhile
};

}  // namespace

void write_files_atomically(const std::vector<AtomicWrite>& files) {
  std::vector<Staged> staged;
  staged.reserve(files.size());
  const auto remove_temporaries = [&] {
    for (const Staged& s : staged) std::remove(s.temp.c_str());
  };
  try {
    for (const AtomicWrite& f : files) {
      const std::string path = checked_output_path(f.path);  // a link's target; never a device or folder
      remove_stale_temporaries(path);
      const std::string temp = make_temp_name(path);
      staged.push_back({path, temp, std::make_unique<PendingTemporary>(temp)});
    }
    for (size_t i = 0; i < files.size(); ++i) {
      try {
        files[i].write(staged[i].temp);
      } catch (const Error& e) {
        throw naming_path(e, staged[i].temp, staged[i].path);
      }
      sync_to_disk(staged[i].temp, false);
    }
  } catch (...) {
    remove_temporaries();
    throw;
  }
  // Every file is complete on disk: renames take no space and, within a folder, do not fail
  // for want of it; a file already renamed stays when a later one cannot be.
  for (size_t i = 0; i < staged.size(); ++i) {
    if (std::rename(staged[i].temp.c_str(), staged[i].path.c_str()) == 0) continue;
    const Error failed(staged[i].path + ": cannot rename temporary file into place: " + std::strerror(errno));
    for (size_t j = i; j < staged.size(); ++j) std::remove(staged[j].temp.c_str());
    throw failed;
  }
  for (const Staged& s : staged) {
    const fs::path parent = fs::path(s.path).parent_path();
    sync_to_disk(parent.empty() ? "." : parent.string(), true);
  }
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
