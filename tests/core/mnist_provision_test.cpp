#include "data/mnist_provision.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "temp_dir.h"
#include "util/error.h"
#include "util/subprocess.h"

using namespace translution;
using namespace translution::test_support;

namespace {

// PATH holding only the tools named (as links), so npm is out of sight and the
// mirror is the source under test. Restores PATH when it goes out of scope.
class RestrictedPath {
 public:
  explicit RestrictedPath(const std::vector<std::string>& tools) : saved_(std::getenv("PATH")) {
    for (const auto& tool : tools)
      for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"})
        if (std::filesystem::exists(std::string(dir) + "/" + tool)) {
          std::filesystem::create_symlink(std::string(dir) + "/" + tool, bin_.file(tool));
          break;
        }
    ::setenv("PATH", bin_.path().c_str(), 1);
  }
  ~RestrictedPath() { ::setenv("PATH", saved_.c_str(), 1); }

 private:
  std::string saved_;
  TempDir bin_;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace

TEST(MnistProvision, ReportsMissingAndWrongSizedFiles) {
  TempDir dir;
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), {0, 0, 8, 1, 0, 0, 0, 0});
  const auto statuses = check_mnist_dir(dir.path().string());
  ASSERT_EQ(statuses.size(), 4u);
  EXPECT_EQ(statuses[0].problem(), "missing");
  EXPECT_NE(statuses[3].problem().find("wrong size: 8 bytes, expected 10008"), std::string::npos);
  EXPECT_FALSE(mnist_dir_complete(dir.path().string()));
}

TEST(MnistProvision, DetectsCorruptionOfRightSizedFile) {
  const std::string real = mnist_dir();
  ASSERT_FALSE(real.empty());
  TempDir dir;
  auto bytes = read_bytes(real + "/t10k-labels-idx1-ubyte");
  ASSERT_EQ(bytes.size(), 10008u);
  bytes[5000] ^= 1;
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), bytes);
  const auto status = check_mnist_dir(dir.path().string())[3];
  EXPECT_NE(status.problem().find("checksum mismatch"), std::string::npos) << status.problem();
}

// The mirror path end to end, served from a local directory: gzipped files are
// fetched, decompressed, verified and renamed into place; nothing else is left.
TEST(MnistProvision, FetchesFromMirrorAndVerifies) {
  const std::string real = mnist_dir();
  ASSERT_FALSE(real.empty());
  TempDir mirror, target;
  for (const auto& spec : mnist_file_specs()) {
    std::filesystem::copy_file(real + "/" + spec.name, mirror.file(spec.name));
    ASSERT_EQ(std::system(("gzip -1 '" + mirror.file(spec.name) + "'").c_str()), 0);
  }
  ScopedEnv mirror_env("TRANSLUTION_MNIST_MIRROR", "file://" + mirror.path().string());
  RestrictedPath path({"curl", "gzip"});
  ASSERT_FALSE(program_on_path("npm"));
  ASSERT_TRUE(program_on_path("curl") && program_on_path("gzip")) << "curl and gzip are needed for this test";
  std::vector<std::string> log;
  fetch_mnist(target.path().string(), [&](const std::string& l) { log.push_back(l); });
  EXPECT_TRUE(mnist_dir_complete(target.path().string()));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(target.path())) ++entries;
  EXPECT_EQ(entries, 4u) << "temporary files left behind";
}

TEST(MnistProvision, FailsWithClearMessageWhenNoSourceWorks) {
  TempDir target;
  ScopedEnv mirror_env("TRANSLUTION_MNIST_MIRROR", "file:///nonexistent/mirror");
  RestrictedPath path({"curl", "gzip"});
  std::string message;
  try {
    fetch_mnist(target.path().string(), [](const std::string&) {});
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("could not provision MNIST"), std::string::npos) << message;
  EXPECT_NE(message.find("missing"), std::string::npos) << message;
}
