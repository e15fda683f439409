#include "cli/args.h"

#include <cstdlib>
#include <iostream>

#include "util/error.h"

namespace translution::cli {

Args::Args(const std::vector<std::string>& words, const std::set<std::string>& flags,
           const std::set<std::string>& options) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0 || w == "--") {
      positional_.push_back(w);
      continue;
    }
    std::string name = w.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name)) {
      if (inline_value) throw Error("option --" + name + " takes no value");
      flags_.insert(name);
    } else if (options.count(name)) {
      if (!inline_value) {
        if (i + 1 >= words.size()) throw Error("option --" + name + " needs a value");
        value = words[++i];
      }
      values_[name] = value;
    } else {
      throw Error("unknown option --" + name + " (see --help)");
    }
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string Args::get_choice(const std::string& name, const std::vector<std::string>& choices) const {
  const std::string v = get(name, choices.front());
  for (const std::string& c : choices)
    if (v == c) return v;
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  throw Error("unknown --" + name + " '" + v + "' (expected " + expected + ")");
}

std::string Args::require(const std::string& name) const {
  if (!has(name)) throw Error("missing required option --" + name);
  return get(name);
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  if (!has(name)) return fallback;
  const std::string v = get(name);
  char* end = nullptr;
  const long long parsed = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') throw Error("--" + name + " expects a whole number, got '" + v + "'");
  return parsed;
}

double Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string v = get(name);
  char* end = nullptr;
  const double parsed = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') throw Error("--" + name + " expects a number, got '" + v + "'");
  return parsed;
}

std::optional<int> usage_exit(const std::vector<std::string>& words, const char* usage, bool need_subcommand) {
  if (need_subcommand && words.empty()) {
    std::cout << usage;
    return 2;
  }
  for (const auto& w : words)
    if (w == "--help" || w == "-h") {
      std::cout << usage;
      return 0;
    }
  return std::nullopt;
}

}  // namespace translution::cli
