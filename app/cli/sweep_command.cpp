// `translution sweep`
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/memory_check.h"
#include "cli/progress_bar.h"
#include "data/mnist_provision.h"
#include "train/checkpoint.h"
#include "train/translation_sweep.h"
#include "util/device.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

struct SweepArgs {
  std::string checkpoint, out, data_dir = default_mnist_dir(), device = "auto";
  SweepOptions sweep;
  bool force = false, json = false;
};

int sweep(const SweepArgs& a) {
  const c10::Device device = parse_device(a.device);
  const std::string& prefix = a.out;
  const SweepOptions& options = a.sweep;
  // "results/" would write results/.csv, a hidden file; "." and ".." name folders, not files.
  const std::string last = std::filesystem::path(prefix).filename().string();
  if (prefix.empty() || prefix.back() == '/' || last == "." || last == "..")
    throw Error("--out '" + prefix + "' names no file: give a prefix such as results/sweep");
  const SweepFiles files = sweep_files(prefix);
  const std::vector<std::string> outputs = {files.csv, files.accuracy_png, files.probability_png};
  for (const std::string& output : outputs) checked_output_path(output);
  std::vector<std::string> inputs = mnist_paths(a.data_dir);
  inputs.push_back(a.checkpoint);
  refuse_inputs_as_outputs(inputs, outputs);
  const EngineOptions engine;  // sweep has no flags for them: the defaults
  check_checkpoints(engine, a.force, {a.checkpoint}, std::max<int64_t>(options.digits, 1), "--digits",
                    device);
  const Checkpoint c = load_checkpoint(a.checkpoint, device);
  const MnistDigits test = load_mnist(a.data_dir, Split::Test);
  ProgressBar bar("sweep", true);
  const SweepResult r = translation_sweep(engine, c.model, test, options, device,
                                          [&](int64_t d, int64_t t) { bar.update(d, t); });
  bar.finish();
  write_sweep_files(prefix, r);  // the three together or none
  const double worst = r.accuracy.min().item<double>(), best = r.accuracy.max().item<double>();
  const int64_t mid = int64_t(r.positions.size()) / 2;
  const double centre = r.accuracy[mid][mid].item<double>();
  if (a.json) {
    const nlohmann::ordered_json out = {{"checkpoint", a.checkpoint},
                                        {"model", c.config.model},
                                        {"positions", int64_t(r.positions.size() * r.positions.size())},
                                        {"digits", r.digits},
                                        {"mean_accuracy", r.mean_accuracy()},
                                        {"min_accuracy", worst},
                                        {"max_accuracy", best},
                                        {"centre_accuracy", centre},
                                        {"mean_true_probability", r.true_probability.mean().item<double>()},
                                        {"csv", files.csv}};
    std::cout << json_line(out) << std::endl;
  } else {
    std::printf("%s: %zu x %zu positions, %lld digits each\n", c.config.model.c_str(), r.positions.size(),
                r.positions.size(), (long long)r.digits);
    std::printf("  accuracy: mean %.2f%%, worst %.2f%%, best %.2f%%, centre %.2f%%\n",
                100 * r.mean_accuracy(), 100 * worst, 100 * best, 100 * centre);
    std::printf("  wrote %s, %s, %s\n", files.csv.c_str(), files.accuracy_png.c_str(),
                files.probability_png.c_str());
  }
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& root, Runners& runners) {
  CLI::App* app =
      root.add_subcommand("sweep", "accuracy at every position of the canvas (CSV and heat maps)");
  auto o = std::make_shared<SweepArgs>();
  app->add_option("--checkpoint", o->checkpoint, "the model")->required();
  app->add_option("--out", o->out, "writes PREFIX.csv, PREFIX-accuracy.png, PREFIX-probability.png")
      ->required()
      ->type_name("PREFIX");
  // MNIST's test split holds 10,000: checked before the memory check, which would suggest more.
  app->add_option("--digits", o->sweep.digits, "test digits at each position")
      ->check(in_range("--digits", 1, 10000))
      ->capture_default_str();
  app->add_option("--stride", o->sweep.stride, "pixels between positions")->capture_default_str();
  add_device(*app, o->device);
  app->add_option("--data-dir", o->data_dir, "MNIST folder");
  app->add_flag("--force", o->force, kForceHelp);
  app->add_flag("--json", o->json, "print one JSON object");
  runners[app] = [o] { return sweep(*o); };
}

}  // namespace translution::cli
