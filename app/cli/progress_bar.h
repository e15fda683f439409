#pragma once
// A one-line terminal progress bar with rate and ETA, drawn on stderr so stdout
// stays machine-readable. Silent when disabled or when stderr is not a terminal.
#include <chrono>
#include <string>

namespace translution::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled);
  void update(int64_t done, int64_t total);
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace translution::cli
