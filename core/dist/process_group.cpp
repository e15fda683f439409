#include "dist/process_group.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <torch/version.h>
#include <unistd.h>

#include "dist/rendezvous_handshake.h"
#include "dist/store_client.h"
#include "dist/store_file.h"
#include "dist/store_server.h"

#if defined(TRANSLUTION_WITH_GLOO) || defined(TRANSLUTION_WITH_NCCL)
#define TRANSLUTION_WITH_C10D 1
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif
#endif
#ifdef TRANSLUTION_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef TRANSLUTION_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace translution {
namespace {

std::string first_line(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

void GroupOptions::validate() const {
  if (world_size < 1 || world_size > kMaxRanks)
    throw Error("--world-size " + std::to_string(world_size) + " must be from 1 to " +
                std::to_string(kMaxRanks));
  if (rank < 0 || rank >= world_size)
    throw Error("--rank " + std::to_string(rank) + " must be at least 0 and below --world-size " +
                std::to_string(world_size));
  if (backend != "auto" && backend != "gloo" && backend != "nccl")
    throw Error("--backend " + backend + " is not one of auto, gloo, nccl");
  if (timeout.count() < 1) throw Error("--timeout must be at least 1 second");
  if (master.rfind("file:", 0) == 0) {
    if (master.size() == 5) throw Error("--master file: needs a path (file:PATH)");
    // The ranks share the file: a folder, a FIFO or a device there would make c10d's store
    // fail as it opens, or block; a link would have it create or write a file elsewhere; and
    // a file another user may write could be filled with records that stall the run.
    const std::string path = master.substr(5);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // the first rank creates it
    if (S_ISLNK(st.st_mode))
      throw Error("--master " + master + ": " + path + " is a link: name the rendezvous file itself");
    if (!S_ISREG(st.st_mode))
      throw Error("--master " + master + ": " + path +
                  " is not a regular file (the ranks' rendezvous file is created there, or shared)");
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      throw Error("--master " + master + ": " + path + " may be written by " +
                  (st.st_uid != ::geteuid() ? "another user (its owner)" : "users other than its owner") +
                  ": a rendezvous file must be this user's alone (remove it, or name another path)");
    return;
  }
  const size_t colon = master.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == master.size())
    throw Error("--master " + (master.empty() ? std::string("(none)") : master) +
                " is not HOST:PORT or file:PATH");
  const std::string port = master.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) < 1 ||
      std::stoi(port) > 65535)
    throw Error("--master " + master + ": the port " + port + " is not a number from 1 to 65535");
  if (run_id.empty() && world_size > 1)  // a lone rank admits no one
    throw Error("--master " + master +
                " needs a run id: --run-id TEXT (or TRANSLUTION_RUN_ID), the same on every "
                "rank and known to no one else, so that rank 0 admits only this run's ranks");
  // Whoever reaches rank 0's port gets its proof over a nonce (dist/rendezvous_handshake.h), and
  // can try guesses of the id against it offline: a short or common one would not hold.
  if (world_size > 1 && run_id.size() < kMinRunIdChars)
    throw Error("--run-id of " + std::to_string(run_id.size()) +
                " characters is too easily guessed: give one of at least " + std::to_string(kMinRunIdChars) +
                " random characters, e.g. $(head -c 16 /dev/urandom | base64)");
}

std::string first_difference(const std::string& mine, const std::string& theirs) {
  const std::vector<std::string> a = lines(mine), b = lines(theirs);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)", y = i < b.size() ? b[i] : "(nothing)";
    if (x != y) return x + " against " + y;
  }
  return {};
}

#ifdef TRANSLUTION_WITH_C10D

#if TORCH_VERSION_MAJOR >= 2
using Backend = c10d::Backend;  // 2.x: process groups dispatch to backends
#else
using Backend = c10d::ProcessGroup;  // 1.13: the backend is the process group
#endif

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// What answer_within throws: the store did not answer in time.
class StoreStalled : public Error {
 public:
  using Error::Error;
};

// Runs `task` on a thread of its own and waits for it at most `limit`, then throws
// StoreStalled(`late`): c10d's FileStore timeouts do not bound every wait (another process's
// lock on the file holds every request), nor is a backend's connecting bounded by the store's.
// A task still running then
// is left to the process's exit, so it must hold by value whatever it uses.
template <typename T>
T answer_within(std::chrono::seconds limit, std::function<T()> task, const std::string& late) {
  auto answer = std::make_shared<std::promise<T>>();
  std::future<T> result = answer->get_future();
  // The task is let go before the answer is given, so what it holds (a store) is released on
  // the waiting thread's terms, not later on this one.
  std::thread([task = std::move(task), answer]() mutable {
    try {
      T value = task();
      task = nullptr;
      answer->set_value(std::move(value));
    } catch (...) {
      task = nullptr;
      answer->set_exception(std::current_exception());
    }
  }).detach();
  if (result.wait_for(limit) != std::future_status::ready) throw StoreStalled(late);
  return result.get();
}

// c10d's view of rank 0's store (dist/store_client.h), for the backends and the handshake below.
// A timeout of zero, which c10d reads as none, is the store's own: nothing here waits unbounded.
class RankStore : public c10d::Store {
 public:
  RankStore(std::shared_ptr<StoreClient> client, std::chrono::milliseconds timeout)
      : Store(timeout), client_(std::move(client)) {}

  // Another handle on the same connection, which takes the requests of both in turn. PyTorch
  // 2.x asks for it (its Store declares clone()); 1.13 has no such member to override.
  c10::intrusive_ptr<c10d::Store> clone() { return c10::make_intrusive<RankStore>(client_, timeout_); }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    client_->set(key, value, timeout_);
  }
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    return client_->compare_set(key, expected, desired, timeout_);
  }
  std::vector<uint8_t> get(const std::string& key) override { return client_->get(key, timeout_); }
  int64_t add(const std::string& key, int64_t value) override { return client_->add(key, value, timeout_); }
  bool deleteKey(const std::string& key) override { return client_->remove(key, timeout_); }
  bool check(const std::vector<std::string>& keys) override { return client_->check(keys, timeout_); }
  int64_t getNumKeys() override { return client_->count(timeout_); }
  void wait(const std::vector<std::string>& keys) override { client_->wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    client_->wait(keys, timeout == kNoTimeout ? timeout_ : timeout);
  }

 private:
  std::shared_ptr<StoreClient> client_;
};

}  // namespace

// A rank's heartbeat: a counter it raises in the store every second from a thread of
// its own, on a store connection of its own. A rank that died or hangs (even inside a
// collective, where the counts of collectives reached cannot tell) stops raising it.
class Heartbeat {
 public:
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, std::string key)
      : store_(std::move(store)), key_(std::move(key)) {
    thread_ = std::thread([this] { beat(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  // Keeps its store from being destroyed (see ProcessGroup::State): a reference is leaked, while
  // store_ stays as it is for the beat thread, which may be about to use it.
  void abandon_store() { (void)c10::intrusive_ptr<c10d::Store>(store_).release(); }

 private:
  void beat() {
    for (int64_t n = 1;; ++n) {
      const std::string count = std::to_string(n);
      try {
        store_->set(key_, bytes(count));  // not under the lock: it may block
      } catch (const std::exception&) {
        return;  // the store is gone: the run is ending
      }
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) return;
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Whether the rendezvous file at `path` is one c10d's FileStore can still let go of: gone (it
// then does nothing), or a regular file. Its records are not read again: a long run's log
// outgrows what a joining rank reads, and another process's lock on it would hold this one.
bool store_file_intact(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  return S_ISREG(st.st_mode);
}

struct ProcessGroup::State {
  std::shared_ptr<StoreServer> server;  // rank 0 across machines: served until the group ends
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Backend> backend;
  std::string backend_name;
  std::string file;                      // a FileStore's path; empty for rank 0's store
  bool store_failed = false;             // a store operation threw or stalled: its file may be unreadable now
  std::unique_ptr<Heartbeat> heartbeat;  // last member: stops first

  // A FileStore, destroyed, writes its file once more, and throws from its destructor, which
  // ends the process, where that write fails (the file replaced by a folder, or not seekable).
  // Such a store, or one whose requests stalled, is abandoned to the process's exit instead,
  // which follows the group's end.
  ~State() {
    const bool file_gone_bad = !file.empty() && (store_failed || !store_file_intact(file));
    if (!file_gone_bad && !store_failed) return;
    if (heartbeat) heartbeat->abandon_store();
    (void)store.release();
  }
};

namespace {

constexpr const char* kHello = "translution/hello/";
constexpr const char* kClaim = "translution/claim/";
constexpr const char* kReached = "translution/reached/";
constexpr const char* kAlive = "translution/alive/";
constexpr const char* kChecked = "translution/checked/";

// c10d logs each failed bind and connect attempt to stderr before it throws; the error
// this file makes of it says the same in one line, so the log is kept out of the way.
// One process-wide count, so that ranks joining on several threads (the tests) restore the
// real stderr once, after the last of them.
class QuietStderr {
 public:
  QuietStderr() {
    std::lock_guard<std::mutex> lock(mutex());
    if (depth()++ > 0) return;
    saved() = ::dup(STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved() >= 0 && devnull >= 0) ::dup2(devnull, STDERR_FILENO);
    if (devnull >= 0) ::close(devnull);
  }
  ~QuietStderr() {
    std::lock_guard<std::mutex> lock(mutex());
    if (--depth() > 0 || saved() < 0) return;
    ::dup2(saved(), STDERR_FILENO);
    ::close(saved());
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static int& depth() {
    static int d = 0;
    return d;
  }
  static int& saved() {
    static int fd = -1;
    return fd;
  }
};

// The FileStore at file:PATH, where the ranks of one machine meet.
c10::intrusive_ptr<c10d::Store> open_file_store(const GroupOptions& o) {
  const QuietStderr quiet;
  try {
    check_store_file(o.master.substr(5));
  } catch (const Error& e) {
    throw Error("--master " + o.master + ": " + e.what());
  }
  // c10d would create the file readable by every user, and whoever can open it can lock it
  // and stall the ranks: the first rank creates it for this user alone (a rank that finds
  // it there, or cannot create it, leaves the rest to the store).
  if (const int fd = ::open(o.master.substr(5).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            S_IRUSR | S_IWUSR);
      fd >= 0)
    ::close(fd);
  try {
    // FileStore removes the file once all its connections (two a rank: the heartbeat has
    // its own) have closed and at least world_size have finished.
    auto store = c10::make_intrusive<c10d::FileStore>(o.master.substr(5), o.world_size);
    store->setTimeout(o.timeout);
    return store;
  } catch (const std::exception& e) {
    throw Error("cannot open the rendezvous file " + o.master.substr(5) + ": " + first_line(e.what()));
  }
}

// Where the ranks meet: the FileStore at file:PATH (which `train --nproc` keeps in a folder of
// its own), or across machines rank 0's store, served on the connections of the ranks it
// admitted (`server`, set on rank 0). No store is touched before the rank was admitted.
c10::intrusive_ptr<c10d::Store> meet(const GroupOptions& o, std::shared_ptr<StoreServer>& server) {
  if (o.master.rfind("file:", 0) == 0) return open_file_store(o);
  if (o.rank != 0) {
    Hello hello;
    hello.rank = uint32_t(o.rank);
    hello.world_size = uint32_t(o.world_size);
    auto client = std::make_shared<StoreClient>(introduce(o.master, hello, o.run_id, o.timeout), o.master);
    return c10::make_intrusive<RankStore>(std::move(client), o.timeout);
  }
  RendezvousListener listener(o.master);  // first: a port in use is named before anything is served
  server = std::make_shared<StoreServer>();
  listener.admit(o.world_size, o.run_id, o.timeout,
                 [&](int rank, Socket connection, const std::string& peer) {
                   server->serve(rank, std::move(connection), peer);
                 });
  return c10::make_intrusive<RankStore>(std::make_shared<StoreClient>(server), o.timeout);
}

// Another handle on the store the ranks met in, for the heartbeat: a FileStore of its own (its
// requests hold a lock on the file), else one more on the same connection.
c10::intrusive_ptr<c10d::Store> heartbeat_store(const GroupOptions& o,
                                                const c10::intrusive_ptr<c10d::Store>& store) {
  if (o.master.rfind("file:", 0) == 0) return open_file_store(o);
  return static_cast<RankStore&>(*store).clone();
}

// A count a rank wrote in the store ("12"), or -1 where the value is not one: what the store
// holds is a peer's word (another program's, in a stale rendezvous file), never trusted to parse.
int64_t count_in(const std::string& value) {
  if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoll(value);
}

// What rank `r` announced: its world size, then its fingerprint.
std::pair<int, std::string> read_hello(c10d::Store& store, int r) {
  const std::string hello = text(store.get(kHello + std::to_string(r)));
  const size_t newline = hello.find('\n');
  const int64_t world = count_in(hello.substr(0, newline));
  if (world < 1 || world > kMaxRanks || newline == std::string::npos)
    throw Error("what rank " + std::to_string(r) +
                " announced in the rendezvous store is not a world size and a configuration: another "
                "program wrote there (a stale rendezvous file, or a rank that is not this program)");
  return {int(world), hello.substr(newline + 1)};
}

void check_hello(c10d::Store& store, const GroupOptions& o, const std::string& fingerprint, int other) {
  const auto [world, theirs] = read_hello(store, other);
  const std::string me = "rank " + std::to_string(o.rank), them = "rank " + std::to_string(other);
  if (world != o.world_size)
    throw Error(them + " was started with --world-size " + std::to_string(world) + " and " + me + " with " +
                std::to_string(o.world_size) + ": every rank needs the same");
  if (const std::string d = first_difference(fingerprint, theirs); !d.empty())
    throw Error(me + "'s training configuration differs from " + them + "'s: " + d);
}

void handshake(c10d::Store& store, const GroupOptions& o, const std::string& fingerprint) {
  if (store.add(kClaim + std::to_string(o.rank), 1) > 1)
    throw Error("another process already joined this run as rank " + std::to_string(o.rank) +
                " (--rank must differ on every process" +
                (o.master.rfind("file:", 0) == 0
                     ? "; or " + o.master.substr(5) + " is left from a run that was stopped: remove it"
                     : std::string()) +
                ")");
  store.set(kHello + std::to_string(o.rank), bytes(std::to_string(o.world_size) + "\n" + fingerprint));
  std::vector<int> others;
  for (int r = 0; r < o.world_size; ++r)
    if (r != o.rank && (o.rank == 0 || r == 0)) others.push_back(r);
  std::vector<std::string> keys;
  for (int r : others) keys.push_back(kHello + std::to_string(r));
  try {
    store.wait(keys, o.timeout);
  } catch (const std::exception&) {
    std::vector<int> missing;
    for (int r : others)  // may throw too, where the store itself is gone: join names that
      if (!store.check({kHello + std::to_string(r)})) missing.push_back(r);
    throw Error(join_ranks(missing) + " did not join within " + std::to_string(o.timeout.count()) + " s (" +
                std::to_string(o.world_size) + " ranks expected at " + o.master + ")");
  }
  std::string problem;
  for (int r : others) {
    try {
      check_hello(store, o, fingerprint, r);
    } catch (const Error& e) {
      if (problem.empty()) problem = e.what();
    }
  }
  // Rank 0 serves the store: it waits (briefly) until every rank has read what it needs, so that
  // a rank which also has a mismatch to report is not cut off by rank 0's exit.
  store.set(kChecked + std::to_string(o.rank), bytes("1"));
  if (o.rank == 0) {
    std::vector<std::string> checked;
    for (int r : others) checked.push_back(kChecked + std::to_string(r));
    try {
      store.wait(checked, std::min<std::chrono::milliseconds>(o.timeout, std::chrono::seconds(10)));
    } catch (const std::exception&) {
      // a rank that never checks fails on its own
    }
  }
  if (!problem.empty()) throw Error(problem);
}

// A rendezvous file that no other rank ever claimed a place in (they never came, or came to
// another file): this rank's failure to meet them leaves no one who could still read it, so it
// goes rather than stay beside the run. Where any other rank claimed one, c10d removes it once
// every rank has let go (removing it sooner cut a peer off in the middle of naming its problem).
bool alone_in_file_store(c10d::Store& store, const GroupOptions& o) {
  if (o.master.rfind("file:", 0) != 0) return false;
  try {
    // This rank's own place claimed more than once: another process holds it, in a run that goes on.
    if (store.add(kClaim + std::to_string(o.rank), 0) != 1) return false;
    for (int r = 0; r < o.world_size; ++r)
      if (r != o.rank && store.check({kClaim + std::to_string(r)})) return false;
    return true;
  } catch (const std::exception&) {
    return false;  // unreadable now: left as it is
  }
}

// What rank 0's store cut off, to follow a failure to meet: "; cut off: rank 1 (...) sent ...".
std::string cut_off_ranks(const StoreServer& server) {
  std::string text;
  for (const std::string& line : server.cut_off()) text += (text.empty() ? "; cut off: " : "; ") + line;
  return text;
}

// The one line for a store that did not answer within `limit`.
std::string stalled_store(const GroupOptions& o, std::chrono::seconds limit) {
  const std::string where = o.master.rfind("file:", 0) == 0 ? "the rendezvous file " + o.master.substr(5)
                            : o.rank == 0                   ? "the rendezvous store this rank serves"
                                                            : "rank 0's rendezvous store";
  return "--master " + o.master + ": " + where + " did not answer within " + std::to_string(limit.count()) +
         " s: " +
         (o.master.rfind("file:", 0) == 0 ? "something else holds it (a lock on the file?)"
                                          : "a rank stopped answering (a stopped process, or the network?)");
}

// The one line for a store that failed while the ranks met.
std::string store_failure(const GroupOptions& o, const std::exception& e) {
  const std::string why = first_line(e.what());
  if (o.master.rfind("file:", 0) == 0)
    return "--master " + o.master + ": the rendezvous file failed while the ranks met: " + why;
  if (o.rank == 0) return "the rendezvous store this rank serves failed while the ranks met: " + why;
  return "--master " + o.master + ": rank 0 closed the rendezvous before every rank had joined (it " +
         "stopped, or stopped waiting for a rank): " + why;
}

}  // namespace

std::string ProcessGroup::backend_for(const GroupOptions& o) {
  std::string b = o.backend;
  if (b == "auto") {
#ifdef TRANSLUTION_WITH_NCCL
    b = o.cuda ? "nccl" : "gloo";
#else
    b = "gloo";
#endif
  }
#ifndef TRANSLUTION_WITH_GLOO
  if (b == "gloo")
    throw Error(
        "this build has no Gloo backend: its LibTorch ships no Gloo headers (PyTorch's own does not); "
        "Debian's LibTorch with libgloo-dev has them");
#endif
#ifndef TRANSLUTION_WITH_NCCL
  if (b == "nccl")
    throw Error("this build has no NCCL backend: it needs a CUDA LibTorch with NCCL (PyTorch's own)");
#endif
  if (b == "nccl" && !o.cuda)
    throw Error("--backend nccl reduces CUDA tensors: train with --device cuda, or use gloo");
  return b;
}

namespace {

c10::intrusive_ptr<Backend> make_backend(const std::string& name,
                                         const c10::intrusive_ptr<c10d::Store>& store,
                                         const GroupOptions& o) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
#ifdef TRANSLUTION_WITH_NCCL
  if (name == "nccl") {
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = o.timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, o.rank, o.world_size, options);
  }
#endif
#ifdef TRANSLUTION_WITH_GLOO
  auto options = c10d::ProcessGroupGloo::Options::create(o.timeout);
  const bool local = o.local || o.master.rfind("127.", 0) == 0 || o.master.rfind("localhost:", 0) == 0;
  options->devices.push_back(!o.interface.empty()
                                 ? c10d::ProcessGroupGloo::createDeviceForInterface(o.interface)
                             : local ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                     : c10d::ProcessGroupGloo::createDefaultDevice());
  return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, o.rank, o.world_size, options);
#else
  (void)o;
  throw Error("no backend named " + name + " in this build");
#endif
}

// Gloo reduces host memory and NCCL GPU memory: a tensor elsewhere goes through a copy.
bool needs_staging(const std::string& backend, const at::Tensor& t) {
  return backend == "gloo" ? t.is_cuda() : !t.is_cuda();
}

at::Tensor staged(const std::string& backend, const at::Tensor& t, int cuda_device) {
  return backend == "gloo" ? t.cpu() : t.to(at::Device(at::kCUDA, c10::DeviceIndex(cuda_device)));
}

}  // namespace

bool ProcessGroup::available() { return true; }

std::string ProcessGroup::backends() {
  std::string s;
#ifdef TRANSLUTION_WITH_GLOO
  s += "gloo";
#endif
#ifdef TRANSLUTION_WITH_NCCL
  s += std::string(s.empty() ? "" : ", ") + "nccl";
#endif
  return s;
}

std::unique_ptr<ProcessGroup> ProcessGroup::join(const GroupOptions& options,
                                                 const std::string& fingerprint) {
  options.validate();
  const std::string name = backend_for(options);
  auto state = std::make_unique<State>();
  state->store = meet(options, state->server);
  if (options.master.rfind("file:", 0) == 0) state->file = options.master.substr(5);
  // The handshake waits up to the timeout for the ranks, then briefly for their checks. Rank 0
  // waits longest: where the store is stalled, the others give up first and name it, before
  // rank 0's exit closes their connections and leaves them less to say.
  const auto limit = 2 * std::chrono::duration_cast<std::chrono::seconds>(options.timeout) +
                     std::chrono::seconds(options.rank == 0 ? 20 : 15);
  try {
    answer_within<bool>(
        limit,
        [store = state->store, options, fingerprint] {
          handshake(*store, options, fingerprint);
          return true;
        },
        stalled_store(options, limit));
  } catch (const StoreStalled&) {
    state->store_failed = true;
    state.reset();
    throw;
  } catch (const Error& e) {
    const bool alone = alone_in_file_store(*state->store, options);
    const std::string cut_off = state->server ? cut_off_ranks(*state->server) : std::string();
    state.reset();  // the store lets go of its file first
    if (alone) std::remove(options.master.substr(5).c_str());
    if (!cut_off.empty()) throw Error(e.what() + cut_off);
    throw;
  } catch (const std::exception& e) {  // the store failed: its file unusable, or rank 0 gone
    state->store_failed = true;
    state.reset();
    throw Error(store_failure(options, e));
  }
  try {
    // Gloo's ranks find each other through the store, which may be stalled too.
    state->backend = answer_within<c10::intrusive_ptr<Backend>>(
        limit, [name, store = state->store, options] { return make_backend(name, store, options); },
        stalled_store(options, limit));
  } catch (const StoreStalled&) {
    state->store_failed = true;
    throw;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("the " + name + " backend could not connect the " + std::to_string(options.world_size) +
                " ranks: " + first_line(e.what()));
  }
  state->backend_name = name;
  c10::intrusive_ptr<c10d::Store> beat_store = heartbeat_store(options, state->store);
  beat_store->setTimeout(std::chrono::seconds(5));  // a stalled store must not hold a rank's exit for long
  state->heartbeat = std::make_unique<Heartbeat>(beat_store, kAlive + std::to_string(options.rank));
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(options, std::move(state)));
}

std::string ProcessGroup::backend() const { return state_->backend_name; }

// Across machines the store is rank 0's: a rank 0 that died makes this write fail, and
// that too is a peer's failure.
void ProcessGroup::reach_collective() {
  ++collectives_;
  try {
    state_->store->set(kReached + std::to_string(rank()), bytes(std::to_string(collectives_)));
  } catch (const std::exception& e) {
    state_->store_failed = true;
    fail(e.what());
  }
}

namespace {

// The ranks to blame: those whose heartbeat stood still over a few seconds (dead or hung),
// else those whose count of collectives reached is below `collectives`. Read with a short
// timeout, since the store itself may have gone with rank 0.
std::vector<int> silent_ranks_in(c10d::Store& store, int rank, int world_size, int64_t collectives) {
  std::vector<int> silent, behind;
  store.setTimeout(std::chrono::seconds(5));
  auto read = [&](const char* prefix, int r) -> int64_t {
    const std::string key = prefix + std::to_string(r);
    return store.check({key}) ? count_in(text(store.get(key))) : 0;
  };
  std::vector<int64_t> before;
  for (int r = 0; r < world_size; ++r) before.push_back(read(kAlive, r));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  for (int r = 0; r < world_size; ++r) {
    if (r != rank && read(kAlive, r) == before[size_t(r)]) silent.push_back(r);
    if (read(kReached, r) < collectives) behind.push_back(r);
  }
  return silent.empty() ? behind : silent;
}

}  // namespace

// Waited for a bounded time (answer_within): the store may be stalled.
std::vector<int> ProcessGroup::silent_ranks() {
  return answer_within<std::vector<int>>(
      std::chrono::seconds(15),
      [store = state_->store, r = rank(), n = world_size(), c = collectives_] {
        return silent_ranks_in(*store, r, n, c);
      },
      "the rendezvous store did not answer within 15 s");
}

void ProcessGroup::fail(const std::string& what) {
  std::vector<int> blamed;
  std::string where;
  try {
    blamed = silent_ranks();
  } catch (const std::exception& e) {
    state_->store_failed = true;  // failed or stalled: not to be waited on again at the end
    if (!state_->file.empty()) {
      where = " (the rendezvous file " + state_->file + " is unusable too)";
    } else if (rank() != 0) {
      blamed = {0};
      where = " (the rendezvous it served is gone too)";
    } else {
      where = " (which, the store could not say: " + first_line(e.what()) + ")";
    }
  }
  const std::string who = blamed.empty() ? "a rank" : join_ranks(blamed);
  throw PeerFailure(who + " stopped answering" + where + " (collective " + std::to_string(collectives_) +
                        ", " + backend() + ": " + first_line(what) + ")" +
                        (state_->server ? cut_off_ranks(*state_->server) : std::string()),
                    blamed);
}

void ProcessGroup::all_reduce_sum(std::vector<at::Tensor>& tensors) {
  if (tensors.empty()) return;
  reach_collective();
  const std::string& name = state_->backend_name;
  std::vector<std::vector<at::Tensor>> inputs;
  for (const at::Tensor& t : tensors)
    inputs.push_back({needs_staging(name, t) ? staged(name, t, options_.cuda_device) : t});
  try {
    std::vector<decltype(state_->backend->allreduce(inputs[0]))> works;
    for (auto& input : inputs) works.push_back(state_->backend->allreduce(input));
    for (auto& work : works) work->wait(options_.timeout);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    if (needs_staging(name, tensors[i])) tensors[i].copy_(inputs[i][0]);
}

void ProcessGroup::broadcast(at::Tensor& tensor) {
  reach_collective();
  const bool stage = needs_staging(state_->backend_name, tensor);
  std::vector<at::Tensor> input{stage ? staged(state_->backend_name, tensor, options_.cuda_device) : tensor};
  try {
    c10d::BroadcastOptions options;
    options.rootRank = 0;
    state_->backend->broadcast(input, options)->wait(options_.timeout);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  if (stage) tensor.copy_(input[0]);
}

#else  // no c10d in this build

struct ProcessGroup::State {};

bool ProcessGroup::available() { return false; }
std::string ProcessGroup::backends() { return {}; }

std::string ProcessGroup::backend_for(const GroupOptions&) {
  throw Error("this build has no distributed training: " + missing_reason());
}

std::unique_ptr<ProcessGroup> ProcessGroup::join(const GroupOptions& options, const std::string&) {
  options.validate();
  throw Error("this build has no distributed training: " + missing_reason());
}

std::string ProcessGroup::backend() const { return {}; }
void ProcessGroup::reach_collective() {}
std::vector<int> ProcessGroup::silent_ranks() { return {}; }
void ProcessGroup::fail(const std::string& what) { throw PeerFailure(what, {}); }
void ProcessGroup::all_reduce_sum(std::vector<at::Tensor>&) { fail("no c10d"); }
void ProcessGroup::broadcast(at::Tensor&) { fail("no c10d"); }

#endif

std::string ProcessGroup::missing_reason() {
#ifdef TRANSLUTION_WITH_C10D
  return {};
#else
  return "it needs c10d's Gloo headers (Debian: apt-get install libgloo-dev, as scripts/setup.sh does) "
         "and a rebuild";
#endif
}

ProcessGroup::ProcessGroup(const GroupOptions& options, std::unique_ptr<State> state)
    : options_(options), state_(std::move(state)) {}

ProcessGroup::~ProcessGroup() = default;

}  // namespace translution
