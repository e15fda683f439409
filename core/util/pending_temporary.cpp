#include "util/pending_temporary.h"

#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>
#include <mutex>

#include <unistd.h>

namespace translution {
namespace {

// A fixed table, since a signal handler may neither allocate nor lock: a slot is claimed
// (Free -> Writing), its path copied in, then published (Ready); only Ready paths are
// unlinked. More temporaries at once than slots go unregistered, and a stale one is
// removed by a later write as before.
enum State : int { kFree, kWriting, kReady };
constexpr int kSlots = 64;
std::atomic<int> g_state[kSlots];
char g_path[kSlots][PATH_MAX];

void remove_and_terminate(int signal) {
  for (int i = 0; i < kSlots; ++i)
    if (g_state[i].load(std::memory_order_acquire) == kReady) ::unlink(g_path[i]);
  std::signal(signal, SIG_DFL);  // both async-signal-safe: end as the signal's default would
  std::raise(signal);
}

void install_handlers() {
  for (const int signal : {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGPIPE}) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = remove_and_terminate;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace

PendingTemporary::PendingTemporary(const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, install_handlers);
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int free = kFree;
    if (!g_state[i].compare_exchange_strong(free, kWriting, std::memory_order_acq_rel)) continue;
    std::memcpy(g_path[i], path.c_str(), path.size() + 1);
    g_state[i].store(kReady, std::memory_order_release);
    slot_ = i;
    return;
  }
}

PendingTemporary::~PendingTemporary() {
  if (slot_ >= 0) g_state[slot_].store(kFree, std::memory_order_release);
}

}  // namespace translution
