#pragma once
// A one-line terminal progress bar with rate and ETA, drawn on stderr so stdout
// stays machine-readable. When stderr is not a terminal (a log file, CI) it
// prints a plain line at every tenth of the work instead. Silent when disabled.
#include <chrono>
#include <string>

namespace translution::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled);
  // `detail` (e.g. the current loss) is shown after the counts; `eta_seconds` < 0
  // means estimate it from the elapsed time.
  void update(int64_t done, int64_t total, const std::string& detail = "", double eta_seconds = -1);
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool terminal_;
  int64_t logged_tenths_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace translution::cli
