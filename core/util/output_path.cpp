#include "util/output_path.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

namespace translution {
namespace fs = std::filesystem;

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The symlink's final target (links to links followed, relative links against their folder),
// whether or not it exists yet: a dangling link is written through too, and stays a link.
std::string link_target(const std::string& path) {
  fs::path at = path;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own limit on links in a path
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(at, ec))) {
      const fs::path target = fs::weakly_canonical(at, ec);
      if (ec) throw Error(path + ": cannot follow the symbolic link: " + ec.message());
      return target.string();
    }
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) throw Error(path + ": cannot follow the symbolic link: " + ec.message());
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
  throw Error(path + ": cannot follow the symbolic link: too many links in a row");
}

void probe_folder(const fs::path& folder, const std::string& path) {
  struct stat st {};
  if (!folder.empty() && (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
    throw Error(path + ": the folder " + folder.string() + " does not exist");
  std::string probe = (folder.empty() ? fs::path(".") : folder).string() + "/.translution-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0)
    throw Error(path + ": cannot write in " + (folder.empty() ? std::string(".") : folder.string()) + ": " +
                std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

std::string checked_output_path(const std::string& path) {
  if (path.empty()) throw Error("an output path is empty");
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) target = link_target(path);
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw Error(path + ": is " + kind_of(st.st_mode) + ", not a regular file; refusing to replace it");
    // A file this user may not write, or that no one may (made read-only; root too keeps it),
    // is kept: the rename that replaces it asks only the folder.
    if ((st.st_mode & 0222) == 0 || (::access(target.c_str(), W_OK) != 0 && errno == EACCES))
      throw Error(path + ": is read-only; refusing to replace it (make it writable to allow)");
  } else if (errno != ENOENT) {
    throw Error(path + ": " + std::strerror(errno));
  }
  probe_folder(fs::path(target).parent_path(), path);
  return target;
}

void refuse_input_as_output(const std::string& input, const std::string& output) {
  struct stat in {
  }, out{};
  if (::stat(input.c_str(), &in) == 0 && ::stat(output.c_str(), &out) == 0 && in.st_dev == out.st_dev &&
      in.st_ino == out.st_ino)
    throw Error(output + ": is the input " + input + " itself; write the result to another file");
}

void refuse_inputs_as_outputs(const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs) {
  for (const std::string& input : inputs)
    for (const std::string& output : outputs) refuse_input_as_output(input, output);
}

}  // namespace translution
