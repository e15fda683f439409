// Output paths: a writer replaces a regular file or creates one, and refuses
// everything else in one line naming the path; a symlink writes to its target.
#include "util/output_path.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temp_dir.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {

using test_support::TempDir;

std::string refusal(const std::string& path) {
  try {
    checked_output_path(path);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(OutputPath, NewAndRegularFilesAreWrittenWhereNamed) {
  TempDir dir;
  EXPECT_EQ(checked_output_path(dir.file("new.ckpt")), dir.file("new.ckpt"));
  std::ofstream(dir.file("old.ckpt")) << "old";
  EXPECT_EQ(checked_output_path(dir.file("old.ckpt")), dir.file("old.ckpt"));
  EXPECT_NE(
      refusal(dir.file("sub/deeper/x.png")).find("the folder " + dir.file("sub/deeper") + " does not exist"),
      std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("sub")));
  // The probe file is gone again.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".translution-probe"), std::string::npos);
}

TEST(OutputPath, DevicesFifosAndFoldersAreNeverReplaced) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("pipe").c_str(), 0600), 0);
  EXPECT_NE(refusal(dir.file("pipe")).find("pipe: is a FIFO, not a regular file; refusing to replace it"),
            std::string::npos);
  EXPECT_NE(refusal(dir.path().string()).find("is a directory"), std::string::npos);
  EXPECT_NE(refusal("/dev/null").find("/dev/null: is a character device"), std::string::npos);
  // A link to a device is judged by its target, and stays a link.
  std::filesystem::create_symlink("/dev/null", dir.file("sink"));
  EXPECT_NE(refusal(dir.file("sink")).find("is a character device"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("sink")));
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
  EXPECT_NE(refusal("/proc/self/x.ckpt").find("/proc/self/x.ckpt: cannot write in /proc/self"),
            std::string::npos);
  // The atomic writer, used by every command, refuses the same before writing anything.
  EXPECT_THROW(write_file_atomically(dir.file("pipe"), [](const std::string&) { FAIL() << "wrote"; }), Error);
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(OutputPath, ALinkWritesToItsTargetAndStaysALink) {
  TempDir dir;
  std::ofstream(dir.file("target.ckpt")) << "old";
  std::filesystem::create_symlink("target.ckpt", dir.file("latest.ckpt"));  // relative, as `ln -s` makes them
  EXPECT_EQ(checked_output_path(dir.file("latest.ckpt")), dir.file("target.ckpt"));
  write_file_atomically(dir.file("latest.ckpt"),
                        [](const std::string& temp) { std::ofstream(temp) << "new"; });
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("latest.ckpt")));
  std::string text;
  std::ifstream(dir.file("target.ckpt")) >> text;
  EXPECT_EQ(text, "new");
}

// The replacement takes the old file's permissions (a private file stays private); a file that
// no one may write is kept, whoever runs the writer.
TEST(OutputPath, AReplacedFileKeepsItsPermissionsAndAReadOnlyOneStays) {
  TempDir dir;
  const std::string private_file = dir.file("private.ckpt"), read_only = dir.file("read-only.ckpt");
  std::ofstream(private_file) << "old";
  std::ofstream(read_only) << "old";
  ASSERT_EQ(::chmod(private_file.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(read_only.c_str(), 0444), 0);
  write_file_atomically(private_file, [](const std::string& temp) { std::ofstream(temp) << "new"; });
  struct stat st {};
  ASSERT_EQ(::stat(private_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(refusal(read_only),
            read_only + ": is read-only; refusing to replace it (make it writable to allow)");
  EXPECT_THROW(write_file_atomically(read_only, [](const std::string&) { FAIL() << "wrote"; }), Error);
  std::string text;
  std::ifstream(read_only) >> text;
  EXPECT_EQ(text, "old");
}

// Temporaries of killed writes are removed by the next write of the same file once over an
// hour old; a young one (perhaps a write in progress) and other files' stay.
TEST(OutputPath, StaleTemporariesOfTheSameFileAreRemoved) {
  TempDir dir;
  for (const char* name :
       {"x.ckpt.tmp-AAAAAA", "x.ckpt.tmp-BBBBBB", "y.ckpt.tmp-CCCCCC", "x.ckpt.tmp-toolong1"})
    std::ofstream(dir.file(name)) << "partial";
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  for (const char* name : {"x.ckpt.tmp-AAAAAA", "y.ckpt.tmp-CCCCCC", "x.ckpt.tmp-toolong1"})
    std::filesystem::last_write_time(dir.file(name), old);
  write_file_atomically(dir.file("x.ckpt"), [](const std::string& temp) { std::ofstream(temp) << "whole"; });
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.ckpt.tmp-AAAAAA")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("x.ckpt.tmp-BBBBBB")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("y.ckpt.tmp-CCCCCC")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("x.ckpt.tmp-toolong1")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("x.ckpt")));
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Files written as a set appear together or not at all: the last writer failing (a full disk)
// leaves the earlier files as they stood and no temporary behind, and its error names the
// file, not the temporary it was writing.
TEST(OutputPath, AFileSetIsReplacedWholeOrNotAtAll) {
  TempDir dir;
  for (const char* name : {"s.csv", "s-accuracy.png"}) std::ofstream(dir.file(name)) << "old";
  const auto writes = [&](bool last_fails) {
    return std::vector<AtomicWrite>{
        {dir.file("s.csv"), [](const std::string& temp) { std::ofstream(temp) << "new"; }},
        {dir.file("s-accuracy.png"), [last_fails](const std::string& temp) {
           std::ofstream(temp) << "new";
           if (last_fails) throw Error("cannot write " + temp + ": No space left on device");
         }}};
  };
  std::string message;
  try {
    write_files_atomically(writes(true));
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "cannot write " + dir.file("s-accuracy.png") + ": No space left on device");
  EXPECT_EQ(contents(dir.file("s.csv")), "old");
  EXPECT_EQ(contents(dir.file("s-accuracy.png")), "old");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
  write_files_atomically(writes(false));
  EXPECT_EQ(contents(dir.file("s.csv")), "new");
  EXPECT_EQ(contents(dir.file("s-accuracy.png")), "new");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
}

// A write ended by a signal ends the process as the signal always did and leaves the file as
// it stood, with nothing beside it: SIGTERM (a scheduler stopping a run) removes a named
// temporary; SIGKILL (the out-of-memory killer) cannot be caught, and the file being written
// has no name until it is complete.
TEST(OutputPath, AWriteEndedBySignalLeavesNothingBehind) {
  for (const int signal : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(signal);
    TempDir dir;
    std::ofstream(dir.file("x.ckpt")) << "old";
    EXPECT_EXIT(write_file_atomically(dir.file("x.ckpt"),
                                      [signal](const std::string& temp) {
                                        std::ofstream(temp) << "partial";
                                        std::raise(signal);
                                      }),
                ::testing::KilledBySignal(signal), "");
    EXPECT_EQ(contents(dir.file("x.ckpt")), "old");
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
  }
}

// The writer may reopen and reread what it wrote, as a path; the file keeps its content, and
// copies arrive whole.
TEST(OutputPath, AWriterReachesItsFileByPath) {
  TempDir dir;
  std::ofstream(dir.file("source")) << "copied";
  write_file_atomically(dir.file("x.ckpt"), [](const std::string& temp) {
    std::ofstream(temp) << "first";
    std::ofstream(temp, std::ios::app) << ", second";
    EXPECT_EQ(contents(temp), "first, second");
    EXPECT_EQ(std::filesystem::file_size(temp), 13u);
  });
  EXPECT_EQ(contents(dir.file("x.ckpt")), "first, second");
  install_file_atomically(dir.file("source"), dir.file("copy"));
  EXPECT_EQ(contents(dir.file("copy")), "copied");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 3);
}

}  // namespace
}  // namespace translution
