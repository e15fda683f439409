#pragma once
// A temporary file that a terminating signal removes. The atomic writer
// (util/atomic_file.h) names a file beside its destination for the instant
// between completing it and renaming it, and for the whole write where the
// filesystem has no unnamed files; a run stopped by a signal then (a job
// scheduler's SIGTERM, a closed terminal's SIGHUP, Ctrl-C's SIGINT, Ctrl-\'s
// SIGQUIT, a closed pipe's SIGPIPE) would leave that file behind until a later
// write of the same file an hour on. While a PendingTemporary lives, the signal unlinks its path and
// the process then ends by the signal's default action, as it would have: the
// exit status and what stands at the destination are unchanged.
//
// The handler is installed on first use, and only for a signal whose action is
// still the default: a handler the program set (train's SIGINT) is left alone.
#include <string>

namespace translution {

class PendingTemporary {
 public:
  explicit PendingTemporary(const std::string& path);
  ~PendingTemporary();
  PendingTemporary(const PendingTemporary&) = delete;
  PendingTemporary& operator=(const PendingTemporary&) = delete;

 private:
  int slot_ = -1;  // its place in the table the handler reads; -1: not registered (the table was full)
};

}  // namespace translution
