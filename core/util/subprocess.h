#pragma once
// Runs an external program (npm, tar, curl) without a shell, so paths with
// spaces or quotes need no escaping.
#include <string>
#include <vector>

namespace translution {

struct ProcessResult {
  bool started = false;  // false when the program could not be executed (not installed)
  int exit_code = -1;
  std::string output;  // stdout and stderr together, trimmed to the last few KB
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& working_dir = "");

bool program_on_path(const std::string& program);

}  // namespace translution
