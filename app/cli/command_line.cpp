#include "cli/command_line.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <c10/util/Exception.h>

#include "util/error.h"

namespace translution::cli {
namespace {

std::string hex_byte(unsigned char c) {
  static const char* digits = "0123456789abcdef";
  return std::string("\\x") + digits[c >> 4] + digits[c & 15];
}

// A word as the error line shows it: every command name is ASCII, so any other byte (a
// control character, or one that is not UTF-8 and would make the line binary) as \xNN.
std::string escaped(const std::string& word) {
  std::string out;
  for (const unsigned char c : word) out += c >= 0x20 && c < 0x7f ? std::string(1, char(c)) : hex_byte(c);
  return out;
}

std::string listing(const std::vector<std::string>& choices, const char* last) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i)
    out += (i == 0 ? "" : i + 1 == choices.size() ? last : ", ") + choices[i];
  return out;
}

}  // namespace

BadValue::BadValue(const std::string& message)
    : CLI::ParseError("BadValue", message, CLI::ExitCodes::ValidationError) {}

CLI::Validator one_of(const std::string& option, const std::vector<std::string>& choices) {
  const CLI::Validator member = CLI::IsMember(choices);
  return CLI::Validator(
      [member, option, choices](std::string& value) -> std::string {
        std::string matched = value;
        try {  // IsMember answers a miss with a message, or throws where it cannot compare
          if (member(matched).empty()) return {};
        } catch (const CLI::ValidationError&) {
        }
        throw BadValue("unknown " + option + " '" + value + "' (expected " + listing(choices, " or ") + ")");
      },
      "");
}

CLI::Validator at_least(const std::string& option, int64_t min) {
  return CLI::Validator(
      [option, min](std::string& value) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long n = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0')
          throw BadValue(option + " expects a whole number, got '" + value + "'");
        if (errno == ERANGE && n > 0)  // CLI11 would clamp it to the type's largest
          throw BadValue(option + " must be at most " + std::to_string(INT64_MAX) + ", got " + value);
        if (n < min) throw BadValue(option + " must be at least " + std::to_string(min) + ", got " + value);
        return {};
      },
      "");
}

CLI::Validator decimal(const std::string& option) {
  return CLI::Validator(
      [option](std::string& value) -> std::string {
        // strtod alone would take hexadecimal ("0x1p-3"), "inf" and "nan" too.
        if (value.empty() || value.find_first_not_of("0123456789.eE+-") != std::string::npos)
          throw BadValue(option + " expects a decimal number, got '" + value + "'");
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(value.c_str(), &end);
        if (*end != '\0' || errno == ERANGE || !std::isfinite(x))
          throw BadValue(option + " expects a decimal number within a double's range, got '" + value + "'");
        return {};
      },
      "");
}

CLI::Validator in_range(const std::string& option, int64_t min, int64_t max) {
  return CLI::Validator(
      [option, min, max](std::string& value) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long n = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0')
          throw BadValue(option + " expects a whole number, got '" + value + "'");
        if (errno == ERANGE || n < min || n > max)
          throw BadValue(option + " must be from " + std::to_string(min) + " to " + std::to_string(max) +
                         ", got " + value);
        return {};
      },
      "");
}

CLI::Option* add_choice(CLI::App& app, const std::string& option, std::string& value,
                        const std::vector<std::string>& choices, const std::string& help) {
  return app.add_option(option, value, help)
      ->check(one_of(option, choices))
      ->type_name(CLI::detail::join(choices, "|"))
      ->capture_default_str();
}

CLI::Option* add_device(CLI::App& app, std::string& device) {
  return app.add_option("--device", device, "where to run")
      ->type_name("auto|cpu|cuda[:N]")
      ->capture_default_str();
}

CLI::Option* add_matrix_threads(CLI::App& app, int& threads) {
  auto parse = [&threads](const std::string& text) {
    char* end = nullptr;
    const long n = std::strtol(text.c_str(), &end, 10);
    // More threads than four a core only queue up, and each holds a scratch buffer.
    const long most = 4 * long(std::max(1u, std::thread::hardware_concurrency()));
    if (text == "auto")
      threads = 0;
    else if (text.empty() || *end != '\0' || n < 1 || n > most)
      throw BadValue("--matrix-threads must be auto or from 1 to " + std::to_string(most) +
                     " (4 a core), got '" + text + "'");
    else
      threads = int(n);
  };
  return app.add_option_function<std::string>("--matrix-threads", parse, "threads sharing one model's work")
      ->type_name("auto|N");
}

std::optional<int> help_or_unknown(CLI::App& root, const std::vector<std::string>& words) {
  CLI::App* at = &root;
  std::string path;  // the commands named before `at`, for its usage line
  size_t i = 0;
  for (; i < words.size(); ++i) {
    const auto named = at->get_subcommands([&](CLI::App* sub) { return sub->check_name(words[i]); });
    if (named.empty()) break;
    path += (path.empty() ? "" : " ") + at->get_name();
    at = named.front();
  }
  const bool help = std::any_of(words.begin(), words.end(),
                                [](const std::string& w) { return w == "--help" || w == "-h"; });
  if (help || (at == &root && !words.empty() && words[0] == "help")) {
    std::cout << at->help(path);
    return 0;
  }
  const auto subcommands = at->get_subcommands([](CLI::App*) { return true; });
  if (subcommands.empty()) {  // a command: CLI11 parses the rest, a misspelt option named first
    for (; i < words.size(); ++i)
      if (words[i].size() > 2 && words[i].rfind("--", 0) == 0) {
        const std::string name = words[i].substr(0, words[i].find('='));
        if (!at->get_option_no_throw(name)) throw Error("unknown option " + name + " (see --help)");
      }
    return std::nullopt;
  }
  if (i == words.size()) {
    std::cout << at->help(path);
    return 2;
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : subcommands) names.push_back(sub->get_name());
  throw Error("unknown " + (at == &root ? std::string() : at->get_name() + " ") + "command '" +
              escaped(words[i]) + "' (expected " + listing(names, " or ") + ")");
}

std::string one_line(const std::exception& e, bool verbose) {
  std::string message = e.what();
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e); torch_error && !verbose)
    message = torch_error->what_without_backtrace();
  if (dynamic_cast<const Error*>(&e))
    message = printable(message);
  else if (!verbose)
    message = message.substr(0, message.find('\n'));
  // LibTorch's allocator names the size in bytes deep in its message; say it the way a user reads it.
  const std::string marker = "you tried to allocate ";
  if (const size_t at = message.find(marker); !verbose && at != std::string::npos) {
    const double bytes = std::strtod(message.c_str() + at + marker.size(), nullptr);
    char text[160];
    std::snprintf(text, sizeof text,
                  "out of memory: a single allocation of %.3g GB failed (a smaller model, image "
                  "or batch needs less; --verbose shows LibTorch's message)",
                  bytes / 1e9);
    message = text;
  }
  return message;
}

std::string printable(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (c == '\n' || c == '\t' || c == '\r')
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    else if (c < 0x20 || c == 0x7f)
      out += hex_byte(c);
    else
      out += char(c);
  }
  return out;
}

}  // namespace translution::cli
