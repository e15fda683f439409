#include "cli/local_workers.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"

extern char** environ;

namespace translution::cli {
namespace {

std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

// This process's words, as it was started.
std::vector<std::string> own_words() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  for (size_t begin = 0; begin < all.size();) {
    const size_t end = all.find('\0', begin);
    words.push_back(all.substr(begin, end - begin));
    begin = end == std::string::npos ? all.size() : end + 1;
  }
  return words;
}

std::vector<std::string> without_nproc(std::vector<std::string> words) {
  for (size_t i = 0; i < words.size();) {
    if (words[i] == "--nproc" && i + 1 < words.size())
      words.erase(words.begin() + long(i), words.begin() + long(i) + 2);
    else if (words[i].rfind("--nproc=", 0) == 0)
      words.erase(words.begin() + long(i));
    else
      ++i;
  }
  return words;
}

// A worker's environment: this one's, its rank, and where it has k cores of its own,
// k threads for OpenMP and OpenBLAS (read when they start).
std::vector<std::string> worker_environment(int rank, size_t cores) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const bool replaced = entry.rfind(std::string(kWorkerEnvironment) + "=", 0) == 0 ||
                          (cores > 0 && (entry.rfind("OMP_NUM_THREADS=", 0) == 0 ||
                                         entry.rfind("OPENBLAS_NUM_THREADS=", 0) == 0));
    if (!replaced) env.push_back(entry);
  }
  env.push_back(std::string(kWorkerEnvironment) + "=" + std::to_string(rank));
  if (cores > 0) {
    env.push_back("OMP_NUM_THREADS=" + std::to_string(cores));
    env.push_back("OPENBLAS_NUM_THREADS=" + std::to_string(cores));
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> p;
  for (std::string& w : words) p.push_back(w.data());
  p.push_back(nullptr);
  return p;
}

// In the child, between fork and exec: only async-signal-safe calls (the parent has threads).
[[noreturn]] void exec_worker(char* const* argv, char* const* envp, const cpu_set_t* cores, int devnull,
                              pid_t rank0) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != rank0) _exit(1);  // rank 0 is already gone
  if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
  if (cores) sched_setaffinity(0, sizeof *cores, cores);
  execve("/proc/self/exe", argv, envp);
  _exit(127);
}

cpu_set_t core_set(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) CPU_SET(c, &set);
  return set;
}

}  // namespace

std::vector<int> rank_cores(int rank, int nproc) {
  const std::vector<int> cores = allowed_cores();
  if (nproc < 1 || int(cores.size()) < nproc) return {};
  const size_t each = cores.size() / size_t(nproc);
  return {cores.begin() + long(each * size_t(rank)), cores.begin() + long(each * size_t(rank + 1))};
}

void pin_to_cores(const std::vector<int>& cores) {
  if (cores.empty()) return;
  const cpu_set_t set = core_set(cores);
  sched_setaffinity(0, sizeof set, &set);
}

LocalWorkers::LocalWorkers(int nproc, const std::vector<std::string>& extra) {
  char folder[] = "/tmp/translution-run-XXXXXX";
  if (!mkdtemp(folder))
    throw Error(std::string("cannot make a rendezvous folder in /tmp: ") + std::strerror(errno));
  folder_ = folder;
  master_ = "file:" + folder_ + "/store";
  const std::vector<std::string> base = without_nproc(own_words());
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  for (int rank = 1; rank < nproc; ++rank) {
    std::vector<std::string> words = base;
    words.insert(words.end(), extra.begin(), extra.end());
    for (const std::string& w : {std::string("--rank"), std::to_string(rank), std::string("--world-size"),
                                 std::to_string(nproc), std::string("--master"), master_})
      words.push_back(w);
    const std::vector<int> cores = rank_cores(rank, nproc);
    std::vector<std::string> env = worker_environment(rank, cores.size());
    const std::vector<char*> argv = pointers(words), envp = pointers(env);
    const cpu_set_t set = core_set(cores);
    const pid_t self = getpid(), pid = fork();
    if (pid < 0) {
      terminate();
      throw Error(std::string("cannot start rank ") + std::to_string(rank) + ": " + std::strerror(errno));
    }
    if (pid == 0) exec_worker(argv.data(), envp.data(), cores.empty() ? nullptr : &set, devnull, self);
    workers_.push_back({rank, pid, 0, false});
  }
  if (devnull >= 0) ::close(devnull);
}

LocalWorkers::~LocalWorkers() {
  terminate();
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

void LocalWorkers::reap(Worker& w, bool block) {
  if (w.exited) return;
  int status = 0;
  const pid_t r = waitpid(w.pid, &status, block ? 0 : WNOHANG);
  if (r == w.pid) {
    w.exited = true;
    w.status = status;
  }
}

std::string LocalWorkers::describe(const Worker& w) {
  const std::string who = "rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) + ")";
  if (WIFSIGNALED(w.status))
    return who + " was killed by signal " + std::to_string(WTERMSIG(w.status)) + " (" +
           strsignal(WTERMSIG(w.status)) + ")";
  return who + " exited with status " + std::to_string(WEXITSTATUS(w.status));
}

std::string LocalWorkers::wait_all() {
  std::string first;
  for (Worker& w : workers_) {
    reap(w, true);
    if (first.empty() && (WIFSIGNALED(w.status) || WEXITSTATUS(w.status) != 0)) first = describe(w);
  }
  return first;
}

namespace {

// Whether a live worker is stopped by a signal (state T in /proc/PID/stat): hung, in effect.
bool stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t name_end = line.rfind(')');  // the command's name may hold spaces
  return name_end != std::string::npos && name_end + 2 < line.size() && line[name_end + 2] == 'T';
}

}  // namespace

std::string LocalWorkers::exits_so_far() {
  std::string seen;
  // A worker's exit can trail the collective that noticed it by a moment.
  for (int attempt = 0; attempt < 20 && seen.empty(); ++attempt) {
    for (Worker& w : workers_) {
      reap(w, false);
      if (!w.exited && stopped(w.pid))
        seen += (seen.empty() ? "" : "; ") + std::string("rank ") + std::to_string(w.rank) + " (pid " +
                std::to_string(w.pid) + ") is stopped by a signal";
      const bool failed =
          WIFSIGNALED(w.status) || (WEXITSTATUS(w.status) != 0 && WEXITSTATUS(w.status) != kPeerFailedStatus);
      if (w.exited && failed) seen += (seen.empty() ? "" : "; ") + describe(w);
    }
    if (seen.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return seen;
}

void LocalWorkers::terminate() {
  for (Worker& w : workers_) {
    reap(w, false);
    if (!w.exited) kill(w.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (Worker& w : workers_) {
    while (!w.exited && std::chrono::steady_clock::now() < deadline) {
      reap(w, false);
      if (!w.exited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!w.exited) {
      kill(w.pid, SIGKILL);
      reap(w, true);
    }
  }
}

}  // namespace translution::cli
