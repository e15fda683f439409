#pragma once
// Writes a file so that readers only ever see the old file or the complete new
// one: content goes to a temporary in the same directory, is flushed to the disk
// (fsync), then renamed into place, and the directory is flushed too, as SQLite
// and Qt's QSaveFile do: a crash never leaves a truncated or missing file. The
// temporary has no name while it is written where the filesystem allows
// (O_TMPFILE), so a killed write leaves nothing; a named one is removed by a
// terminating signal (util/pending_temporary.h).
#include <functional>
#include <string>
#include <vector>

namespace translution {

// `write` receives the temporary's path (/proc/self/fd/N for an unnamed one: open,
// reopen or reread it by that path) and must fully write it (or throw). On any
// exception the temporary file is removed and the exception propagates.
void write_file_atomically(const std::string& path,
                           const std::function<void(const std::string& temp_path)>& write);

// Several files that belong together (a sweep's table and maps): each is written to its
// temporary and flushed, and only when every one is complete are they renamed into place,
// so a failure (a full disk) leaves every path as it stood. An error a writer raises
// names the file's path, not its temporary.
struct AtomicWrite {
  std::string path;
  std::function<void(const std::string& temp_path)> write;
};
void write_files_atomically(const std::vector<AtomicWrite>& files);

// Moves an already complete file into place atomically (same filesystem or copy+rename).
void install_file_atomically(const std::string& source, const std::string& destination);

}  // namespace translution
