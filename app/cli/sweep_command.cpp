// `translution sweep`
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/memory_check.h"
#include "cli/progress_bar.h"
#include "data/mnist_provision.h"
#include "train/checkpoint.h"
#include "train/translation_sweep.h"
#include "util/device.h"
#include "util/json_writer.h"

namespace translution::cli {
namespace {

const std::string kSweepUsage = R"(usage: translution sweep --checkpoint FILE.ckpt --out PREFIX [--digits 100] [--stride 4]
                         [--device auto|cpu|cuda] [--data-dir DIR] [--force] [--json]

Places the first --digits test digits at every position of the model's canvas
(top-left corners every --stride pixels, the last position included) and measures
accuracy and the mean probability of the true class at each position. Writes
PREFIX.csv (x,y,accuracy,true_probability), PREFIX-accuracy.png and
PREFIX-probability.png (heat maps: dark purple 0, yellow 1; rows are y, columns x).
Each position's digits are one batch.
)" + std::string(kForceHelp) + "\n";

}  // namespace

int sweep_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kSweepUsage.c_str(), false)) return *status;
  const Args args(words, {"json", "force"}, {"checkpoint", "out", "digits", "stride", "device", "data-dir"});
  const c10::Device device = parse_device(args.get("device", "auto"));
  const std::string prefix = args.require("out");
  SweepOptions options;
  options.digits = args.get_int("digits", options.digits);
  options.stride = args.get_int("stride", options.stride);
  check_checkpoints(args, {args.require("checkpoint")}, std::max<int64_t>(options.digits, 1), "--digits", device);
  const Checkpoint c = load_checkpoint(args.require("checkpoint"), device);
  const MnistDigits test = load_mnist(args.get("data-dir", default_mnist_dir()), Split::Test);
  ProgressBar bar("sweep", true);
  const SweepResult r = translation_sweep(c.model, test, options, device, [&](int64_t d, int64_t t) { bar.update(d, t); });
  bar.finish();
  write_sweep_csv(prefix + ".csv", r);
  write_sweep_png(prefix + "-accuracy.png", r.accuracy);
  write_sweep_png(prefix + "-probability.png", r.true_probability);
  const double worst = r.accuracy.min().item<double>(), best = r.accuracy.max().item<double>();
  const int64_t mid = int64_t(r.positions.size()) / 2;
  const double centre = r.accuracy[mid][mid].item<double>();
  if (args.flag("json")) {
    std::cout << JsonWriter().add("checkpoint", args.get("checkpoint")).add("model", c.config.model)
                     .add("positions", int64_t(r.positions.size() * r.positions.size())).add("digits", r.digits)
                     .add("mean_accuracy", r.mean_accuracy()).add("min_accuracy", worst).add("max_accuracy", best)
                     .add("centre_accuracy", centre).add("mean_true_probability", r.true_probability.mean().item<double>())
                     .add("csv", prefix + ".csv").str() << std::endl;
  } else {
    std::printf("%s: %zu x %zu positions, %lld digits each\n", c.config.model.c_str(), r.positions.size(),
                r.positions.size(), (long long)r.digits);
    std::printf("  accuracy: mean %.2f%%, worst %.2f%%, best %.2f%%, centre %.2f%%\n", 100 * r.mean_accuracy(),
                100 * worst, 100 * best, 100 * centre);
    std::printf("  wrote %s.csv, %s-accuracy.png, %s-probability.png\n", prefix.c_str(), prefix.c_str(), prefix.c_str());
  }
  return 0;
}

}  // namespace translution::cli
