#pragma once
// `train --nproc N`: the user's process is rank 0 and starts ranks 1..N-1 as copies
// of this program, with the same words plus where to meet (a FileStore in a fresh
// temporary folder) and, where the machine's cores divide, a share of the cores each.
//
// The workers die with rank 0 (PR_SET_PDEATHSIG), so no rank outlives a run that
// was killed; rank 0 ends them when it fails and reaps them when it finishes, and
// names a worker's exit (a status or a signal) when a collective fails. Their
// standard output goes nowhere (rank 0 prints the run); their errors reach the
// terminal, prefixed with the rank.
#include <string>
#include <vector>

#include <sys/types.h>

namespace translution::cli {

// Set in a worker's environment: the rank that its errors are prefixed with, and the
// sign that rank 0 reports a peer's failure for the whole run.
inline constexpr const char* kWorkerEnvironment = "TRANSLUTION_LOCAL_RANK";
// The exit status of a rank that stopped because another failed (rank 0 names the other).
inline constexpr int kPeerFailedStatus = 4;

// The cores a rank of `nproc` gets on this machine: the process's allowed cores split
// evenly (at least 1), and which ones rank `rank` takes.
std::vector<int> rank_cores(int rank, int nproc);

class LocalWorkers {
 public:
  // Makes a fresh rendezvous folder and starts ranks 1..nproc-1 with this process's
  // words (read from /proc/self/cmdline), `--nproc` removed, then `extra`, then their
  // `--rank R --world-size N --master file:PATH`, each pinned to its rank_cores.
  LocalWorkers(int nproc, const std::vector<std::string>& extra);
  // Ends the workers still running (SIGTERM, then SIGKILL) and removes the folder.
  ~LocalWorkers();

  // Where the ranks meet: "file:" and the rendezvous file's path.
  const std::string& master() const { return master_; }

  // Waits for every worker to exit; returns the first one's description that did not
  // exit 0 (empty when all did).
  std::string wait_all();
  // What is known of the workers that have failed so far ("rank 1 (pid 41) was killed by
  // signal 9", "... is stopped by a signal"), leaving out those that only stopped for another's
  // failure; polls for a moment.
  std::string exits_so_far();
  void terminate();

 private:
  struct Worker {
    int rank = 0;
    pid_t pid = -1;
    int status = 0;
    bool exited = false;
  };
  void reap(Worker& w, bool block);
  static std::string describe(const Worker& w);

  std::string folder_, master_;
  std::vector<Worker> workers_;
};

// Pins this process to `cores` (no-op where the list is empty).
void pin_to_cores(const std::vector<int>& cores);

}  // namespace translution::cli
