#pragma once
// A small command-line parser: positional words, `--key value`, `--key=value`
// and `--flag`. Unknown options are errors, so a typo never silently does nothing.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace translution::cli {

class Args {
 public:
  // `flags` take no value; `options` take one. Throws translution::Error on misuse.
  Args(const std::vector<std::string>& words, const std::set<std::string>& flags,
       const std::set<std::string>& options);

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  // One of `choices`, the first when the option is absent; anything else is an
  // error that lists them.
  std::string get_choice(const std::string& name, const std::vector<std::string>& choices) const;
  std::string require(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::set<std::string> flags_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// For `translution GROUP SUB ...`: prints `usage` and returns the exit status when
// nothing was given (2) or --help appears anywhere (0); otherwise nothing.
std::optional<int> usage_exit(const std::vector<std::string>& words, const char* usage, bool need_subcommand = true);

}  // namespace translution::cli
