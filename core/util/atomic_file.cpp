#include "util/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <sys/stat.h>

#include "util/error.h"

namespace translution {
namespace fs = std::filesystem;

namespace {
std::string make_temp_name(const std::string& path) {
  std::string pattern = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) throw Error(path + ": cannot create a temporary file next to it: " + std::strerror(errno));
  // mkstemp makes the file private (0600); give it the permissions a plain new file would get.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  return pattern;
}
}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(const std::string&)>& write) {
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw Error(parent.string() + ": cannot create directory: " + ec.message());
  }
  const std::string temp = make_temp_name(path);
  try {
    write(temp);
    if (std::rename(temp.c_str(), path.c_str()) != 0)
      throw Error(path + ": cannot rename temporary file into place: " + std::strerror(errno));
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
}

void install_file_atomically(const std::string& source, const std::string& destination) {
  write_file_atomically(destination, [&](const std::string& temp) {
    std::error_code ec;
    fs::copy_file(source, temp, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error(destination + ": cannot copy from " + source + ": " + ec.message());
  });
}

}  // namespace translution
