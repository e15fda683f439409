#include "cli/progress_bar.h"

#include <cstdio>

#include <unistd.h>

namespace translution::cli {

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)),
      enabled_(enabled),
      terminal_(::isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int64_t done, int64_t total, const std::string& detail, double eta_seconds) {
  if (!enabled_ || total <= 0) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = double(done) / double(total);
  const double eta = eta_seconds >= 0 ? eta_seconds
                     : done > 0       ? elapsed * double(total - done) / double(done)
                                      : 0;
  if (!terminal_) {
    const int64_t tenths = done * 10 / total;
    if (tenths > logged_tenths_) {
      logged_tenths_ = tenths;
      std::fprintf(stderr, "%s: %lld/%lld (%.0f%%), %.0fs elapsed, ETA %.0fs %s\n", label_.c_str(),
                   (long long)done, (long long)total, 100 * fraction, elapsed, eta, detail.c_str());
    }
    return;
  }
  const int width = 30, filled = int(fraction * width);
  std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld  %.0fs elapsed, ETA %.0fs %s\033[K", label_.c_str(), filled,
               "##############################", width - filled, "", (long long)done, (long long)total,
               elapsed, eta, detail.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace translution::cli
