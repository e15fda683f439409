#pragma once
// What the commands share on top of CLI11: the table main runs them from, and
// option checks whose messages name the option and the value at fault.
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace translution::cli {

// What went wrong in one line: LibTorch's messages carry a stack trace (and
// sometimes several lines) after the first, which only `verbose` keeps. The
// engine's own messages are one line by construction, but may quote a path or a
// file's text: those keep every word, their control characters made printable.
std::string one_line(const std::exception& e, bool verbose);

// Text from a file or a user as one terminal line shows it: a control character
// (a newline would end the line, an escape sequence would drive the terminal) as
// \n, \t, \r or \xNN; everything else, UTF-8 included, as it is.
std::string printable(const std::string& text);

// Each command adds its subcommand to the root app, options bound to state its
// runner reads; main parses the words, then calls the runner of the command named.
using Runners = std::map<const CLI::App*, std::function<int()>>;

// A bad option value whose message already names the option: CLI11 prefixes a
// validator's own message with the name, which would say it twice.
class BadValue : public CLI::ParseError {
 public:
  explicit BadValue(const std::string& message);
};

// A value among `choices` (CLI::IsMember); anything else is
// "unknown --NAME 'VALUE' (expected a, b or c)".
CLI::Validator one_of(const std::string& option, const std::vector<std::string>& choices);

// A whole number of at least `min`: "--NAME must be at least MIN, got 'VALUE'"; one
// too large for 64 bits is refused too.
CLI::Validator at_least(const std::string& option, int64_t min);
// A plain decimal number (1e-3, 0.5), finite: no hexadecimal, inf or nan.
CLI::Validator decimal(const std::string& option);
// A whole number from `min` to `max`, else BadValue naming the option (a number too large
// for 64 bits included, which would otherwise be clamped).
CLI::Validator in_range(const std::string& option, int64_t min, int64_t max);

// `option` bound to `value`, whose value beforehand is the default (shown in --help unless empty).
CLI::Option* add_choice(CLI::App& app, const std::string& option, std::string& value,
                        const std::vector<std::string>& choices, const std::string& help);

// "--device auto|cpu|cuda[:N]" (util/device.h parses it), bound to `device`.
CLI::Option* add_device(CLI::App& app, std::string& device);

// "--matrix-threads auto|N": 0 stands for auto.
CLI::Option* add_matrix_threads(CLI::App& app, int& threads);

// The command's help when --help (or -h) appears anywhere, or a command group is named
// without a subcommand; an unknown command; an unknown option (before CLI11, which would
// first say that a required one is missing where a typo named it). Returns the exit
// status where the run ends here, before CLI11 parses the words.
std::optional<int> help_or_unknown(CLI::App& root, const std::vector<std::string>& words);

}  // namespace translution::cli
