// translution: the headless command line over the engine (no Qt).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cpu/allocator.h"
#include "util/device.h"
#include "util/error.h"

namespace {

// The root app and every command in it.
void add_commands(CLI::App& app, translution::cli::Runners& runners) {
  using namespace translution::cli;
  app.get_formatter()->column_width(34);  // shared with the subcommands added after
  app.option_defaults()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
  add_data_command(app, runners);
  add_model_command(app, runners);
  add_bench_command(app, runners);
  add_train_command(app, runners);
  add_eval_command(app, runners);
  add_sweep_command(app, runners);
  add_predict_command(app, runners);
  add_attribute_command(app, runners);
  add_checkpoint_command(app, runners);
  add_interop_commands(app, runners);
  // After the subcommands, which would inherit it.
  app.footer(
      "Run `translution COMMAND --help` for a command's options. Errors are one line;\n"
      "--verbose (anywhere) adds LibTorch's message and stack trace to them.");
}

// The command the words named: the deepest subcommand CLI11 selected.
const CLI::App* chosen(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

// What a command that runs out of memory can do about it, by the flags it has.
const char* memory_remedy(const CLI::App& command) {
  if (command.get_option_no_throw("--recompute") != nullptr)
    return "a smaller --batch or model, or --recompute, needs less\n";
  return "closing other programs, or a higher limit, gives it more\n";
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
  // What an out-of-memory message names, worked out once the words are parsed: when it is
  // printed, memory may still be short, and nothing may be allocated.
  std::string command_name;
  const char* remedy = memory_remedy(app);
  try {
    if (const auto status = translution::cli::help_or_unknown(app, words)) return *status;
    std::reverse(words.begin(), words.end());  // CLI11 takes the words last first
    app.parse(words);
    const CLI::App* command = chosen(app);
    if (command != &app) command_name = " " + command->get_name();
    remedy = memory_remedy(*command);
    translution::keep_freed_memory();
    // Each command builds its own options from its flags and hands them to its runs.
    translution::start_process(translution::ProcessModels::OneAtATime);
    return runners.at(command)();
  } catch (const CLI::ParseError& e) {  // a bad command line: what CLI11 found, one line
    std::cerr << "error: " << translution::cli::one_line(e, false) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::fputs("error: out of memory while running translution", stderr);
    std::fputs(command_name.c_str(), stderr);
    std::fputs(": it needs more than this machine (or its limits, ulimit -v) let it have; ", stderr);
    std::fputs(remedy, stderr);
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << translution::cli::one_line(e, verbose) << "\n";
    return 1;
  }
}
