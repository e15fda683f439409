#include "cpu/helper_threads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>

#include "util/device.h"
#include "util/engine_options.h"

namespace translution {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSpin = std::chrono::microseconds(300);  // how long an idle helper waits awake

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One helper: waits for its generation counter to move, runs the job, counts it done.
class Helper {
 public:
  Helper() : thread_([this] { loop(); }) {}
  ~Helper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_one();
    thread_.join();
  }

  void start(const std::function<void(int)>* body, int part, std::exception_ptr* error) {
    body_ = body;
    part_ = part;
    error_ = error;
    generation_.fetch_add(1);
    if (sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_one();
    }
  }

  void wait() const {
    const auto since = Clock::now();
    for (int spins = 0; done_.load(std::memory_order_acquire) != generation_.load(); ++spins) {
      if (spins < 4096 || Clock::now() - since < kSpin)
        relax();
      else
        std::this_thread::yield();
    }
  }

 private:
  void loop() {
    long seen = 0;
    for (;;) {
      const auto since = Clock::now();
      for (int spins = 0; generation_.load(std::memory_order_acquire) == seen && !stop_.load(); ++spins)
        if ((spins & 63) == 0 && Clock::now() - since > kSpin) {
          std::unique_lock<std::mutex> lock(mutex_);
          sleeping_.store(true);
          wake_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
          sleeping_.store(false);
        } else if (spins < 256) {
          relax();
        } else {
          // Politely: where the BLAS's own workers (or another model) want this core, they get it.
          std::this_thread::yield();
        }
      if (stop_.load()) return;
      seen = generation_.load();
      try {
        (*body_)(part_);
      } catch (...) {
        *error_ = std::current_exception();
      }
      done_.store(seen, std::memory_order_release);
    }
  }

  std::atomic<long> generation_{0}, done_{0};
  std::atomic<bool> sleeping_{false}, stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void(int)>* body_ = nullptr;
  int part_ = 0;
  std::exception_ptr* error_ = nullptr;
  std::thread thread_;
};

class Team {
 public:
  std::mutex busy;
  std::vector<std::unique_ptr<Helper>> helpers;  // grown under `busy`
};

Team& team() {
  static Team* t = new Team;  // never destroyed: helpers may outlive static destruction order
  return *t;
}

}  // namespace

int matrix_threads(const EngineOptions& engine) { return std::max(0, engine.matrix_threads); }

int free_cores() {
  // Asked once: glibc reads /sys for it on every call, and one image's forward asks dozens of times.
  static const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return at::get_num_threads() > 1 ? 1 : cores;
}

bool engine_splits_products() { return blas_threads() == 1 && free_cores() >= 2; }

int product_parts(const EngineOptions& engine, int64_t multiply_adds) {
  if (const int forced = matrix_threads(engine); forced > 0) return forced;
  const bool small_kernel = multiply_adds <= (int64_t(1) << 20) && free_cores() >= 2;
  return engine_splits_products() || small_kernel ? 2 : 1;
}

int element_parts(const EngineOptions& engine) {
  const int forced = matrix_threads(engine);
  return forced > 0 ? forced : free_cores();
}

int64_t element_grain(const EngineOptions& engine, int64_t grain) {
  return matrix_threads(engine) > 0 ? 1 : grain;
}

void run_parts(int parts, const std::function<void(int)>& body) {
  if (parts <= 1) return body(0);
  // The parts run in turn on this thread where it is itself a part (the team is taken), or
  // where another caller holds the helpers.
  thread_local bool inside = false;
  Team& t = team();
  std::unique_lock<std::mutex> lock(t.busy, std::defer_lock);
  if (inside || !lock.try_lock()) {
    for (int p = 0; p < parts; ++p) body(p);
    return;
  }
  inside = true;
  struct Leave {
    bool& flag;
    ~Leave() { flag = false; }
  } leave{inside};
  while (int(t.helpers.size()) < parts - 1) t.helpers.push_back(std::make_unique<Helper>());
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  for (int p = 1; p < parts; ++p) t.helpers[size_t(p - 1)]->start(&body, p, &errors[size_t(p)]);
  try {
    body(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (int p = 1; p < parts; ++p) t.helpers[size_t(p - 1)]->wait();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void for_each_claimed(size_t n, int parts, size_t chunk,
                      const std::function<void(size_t, size_t, int)>& body) {
  if (parts <= 1) {
    for (size_t i = 0; i < n; ++i) body(i, i + 1, 0);
    return;
  }
  chunk = std::max<size_t>(chunk, 1);
  std::atomic<size_t> claimed{0};
  run_parts(parts, [&](int part) {
    for (size_t begin = claimed.fetch_add(chunk); begin < n;) {
      const size_t end = std::min(begin + chunk, n);
      size_t next_begin = n;
      for (size_t i = begin; i < end; ++i) {
        if (i + 1 == end)
          next_begin = claimed.fetch_add(chunk);  // claimed before the last, to name it as next
        body(i, i + 1 < end ? i + 1 : std::min(next_begin, n), part);
      }
      begin = next_begin;
    }
  });
}

void run_chunks(int64_t n, int64_t grain, int parts, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t most = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int p = int(std::max<int64_t>(1, std::min<int64_t>(parts, most)));
  run_parts(p, [&](int part) { body(n * part / p, n * (part + 1) / p); });
}

}  // namespace translution
