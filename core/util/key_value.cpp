#include "util/key_value.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace translution {

int64_t parse_int_value(const std::string& what, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE)
    throw Error(what + " must be a whole number, got '" + value + "'");
  return v;
}

double parse_double_value(const std::string& what, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(v))
    throw Error(what + " must be a number, got '" + value + "'");
  return v;
}

bool parse_bool_value(const std::string& what, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw Error(what + " must be true or false, got '" + value + "'");
}

std::string format_double(double value) {
  char buffer[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text,
                                                                  const std::string& what) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw Error(what + ": line '" + line + "' is not key=value");
    out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

}  // namespace translution
