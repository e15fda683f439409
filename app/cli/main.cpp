// translution: the headless command line over the engine (no Qt).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <c10/util/Exception.h>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cpu/allocator.h"
#include "util/device.h"
#include "util/error.h"

namespace {

// What went wrong in one line: LibTorch's messages carry a stack trace (and
// sometimes several lines) after the first, which only --verbose shows.
std::string one_line(const std::exception& e, bool verbose) {
  std::string message = e.what();
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e); torch_error && !verbose)
    message = torch_error->what_without_backtrace();
  if (!verbose) message = message.substr(0, message.find('\n'));
  // LibTorch's allocator names the size in bytes deep in its message; say it the way a user reads it.
  const std::string marker = "you tried to allocate ";
  if (const size_t at = message.find(marker); !verbose && at != std::string::npos) {
    const double bytes = std::strtod(message.c_str() + at + marker.size(), nullptr);
    char text[160];
    std::snprintf(text, sizeof text, "out of memory: a single allocation of %.3g GB failed (a smaller model, image "
                  "or batch needs less; --verbose shows LibTorch's message)", bytes / 1e9);
    message = text;
  }
  return message;
}

// The root app and every command in it.
void add_commands(CLI::App& app, translution::cli::Runners& runners) {
  using namespace translution::cli;
  app.get_formatter()->column_width(34);  // shared with the subcommands added after
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
  add_data_command(app, runners);
  add_model_command(app, runners);
  add_bench_command(app, runners);
  add_train_command(app, runners);
  add_eval_command(app, runners);
  add_sweep_command(app, runners);
  add_predict_command(app, runners);
  add_checkpoint_command(app, runners);
  add_interop_commands(app, runners);
  // After the subcommands, which would inherit it.
  app.footer("Run `translution COMMAND --help` for a command's options. Errors are one line;\n"
             "--verbose (anywhere) adds LibTorch's message and stack trace to them.");
}

// The command the words named: the deepest subcommand CLI11 selected.
const CLI::App* chosen(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  const auto verbose_flag = std::find(words.begin(), words.end(), "--verbose");
  const bool verbose = verbose_flag != words.end();
  if (verbose) words.erase(verbose_flag);
  CLI::App app("translution: the headless command line over the engine", "translution");
  translution::cli::Runners runners;
  add_commands(app, runners);
  try {
    if (const auto status = translution::cli::help_or_unknown(app, words)) return *status;
    std::reverse(words.begin(), words.end());  // CLI11 takes the words last first
    app.parse(words);
    translution::keep_freed_memory();
    translution::configure_threads();
    return runners.at(chosen(app))();
  } catch (const CLI::ParseError& e) {  // a bad command line: what CLI11 found, one line
    std::cerr << "error: " << one_line(e, false) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory: the run needs more than this machine has free (a smaller batch or model, or "
                 "--recompute, needs less)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e, verbose) << "\n";
    return 1;
  }
}
