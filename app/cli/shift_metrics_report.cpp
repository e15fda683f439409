#include "cli/shift_metrics_report.h"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command_line.h"
#include "cli/json_line.h"
#include "cli/progress_bar.h"

namespace translution::cli {
namespace {

nlohmann::ordered_json metrics_json(const std::string& path, const Checkpoint& c,
                                    const ShiftMetricsOptions& o, const ShiftMetrics& m) {
  auto consistency = [](const ShiftConsistency& s) {
    return nlohmann::ordered_json{{"shift_px", s.shift},
                                  {"digits", s.digits},
                                  {"consistency", s.consistency},
                                  {"accuracy", s.accuracy}};
  };
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerEquivariance& l : m.equivariance)
    layers.push_back({{"layer", l.layer}, {"tokens", l.tokens}, {"cls", l.cls}});
  return {
      {"checkpoint", path},
      {"model", c.config.model},
      {"seed", o.seed},
      {"consistency_random_pairs", consistency(m.random)},
      {"consistency_1px", consistency(m.one_pixel)},
      {"flip_rate_1px", 1 - m.one_pixel.consistency},
      {"consistency_whole_patch", consistency(m.whole_patch)},
      {"worst_case",
       {{"digits", m.worst_case.digits},
        {"stride_px", m.worst_case.stride},
        {"positions", m.worst_case.positions},
        {"accuracy", m.worst_case.worst_case},
        {"mean_accuracy", m.worst_case.mean_accuracy},
        {"true_probability", m.worst_case.true_probability}}},
      {"equivariance",
       {{"digits", o.equivariance.digits}, {"border_patches", o.equivariance.border}, {"layers", layers}}},
      {"seconds",
       {{"consistency", m.consistency_seconds},
        {"worst_case", m.worst_case_seconds},
        {"equivariance", m.equivariance_seconds}}}};
}

void print_metrics(const std::string& path, const ShiftMetrics& m, const ShiftMetricsOptions& o) {
  const ShiftConsistency &one = m.one_pixel, &patch = m.whole_patch;
  const WorstCaseAccuracy& w = m.worst_case;
  std::printf("%s\n", path.c_str());
  std::printf(
      "  consistency over %lld digits: random places %.1f%%, 1 px %.1f%% (flip rate %.1f%%), whole patch"
      " (%lld px) %.1f%%  (copies read right: %.1f%%, %.1f%%, %.1f%%)\n",
      (long long)one.digits, 100 * m.random.consistency, 100 * one.consistency, 100 * (1 - one.consistency),
      (long long)patch.shift, 100 * patch.consistency, 100 * m.random.accuracy, 100 * one.accuracy,
      100 * patch.accuracy);
  std::printf(
      "  worst case over %lld positions (every %lld px), %lld digits: %.1f%% right everywhere;"
      " mean accuracy %.1f%%, true-class probability %.3f\n",
      (long long)w.positions, (long long)w.stride, (long long)w.digits, 100 * w.worst_case,
      100 * w.mean_accuracy, w.true_probability);
  std::printf(
      "  token equivariance error, whole-patch shifts, %lld digits (image tokens >= %lld patch from the"
      " border | CLS):\n",
      (long long)o.equivariance.digits, (long long)o.equivariance.border);
  for (const LayerEquivariance& l : m.equivariance)
    std::printf("    %-10s %7.4f | %7.4f\n", l.layer.c_str(), l.tokens, l.cls);
  std::printf("  took %.1f s (consistency), %.1f s (worst case), %.1f s (equivariance)\n",
              m.consistency_seconds, m.worst_case_seconds, m.equivariance_seconds);
}

}  // namespace

void add_shift_metrics_options(CLI::App& app, bool& enabled, ShiftMetricsOptions& o) {
  CLI::Option* flag =
      app.add_flag(
             "--shift-metrics", enabled,
             "consistency between random places and under 1-px and whole-patch shifts, worst case over a"
             " grid, equivariance per layer")
          ->excludes("--protocol");
  const int64_t most = 10000;  // the MNIST test split
  app.add_option("--consistency-digits", o.consistency_digits, "shift metrics: digits for consistency")
      ->check(in_range("--consistency-digits", 1, most))
      ->needs(flag);
  app.add_option("--worst-digits", o.worst_case_digits, "shift metrics: digits for the worst case")
      ->check(in_range("--worst-digits", 1, most))
      ->needs(flag);
  app.add_option("--stride", o.stride, "shift metrics: pixels between the worst case's positions")
      ->check(in_range("--stride", 1, 1000))
      ->needs(flag);
  app.add_option("--equivariance-digits", o.equivariance.digits,
                 "shift metrics: digits for the equivariance error")
      ->check(in_range("--equivariance-digits", 1, most))
      ->needs(flag);
  app.add_option("--border", o.equivariance.border,
                 "shift metrics: compare tokens at least this many patches in")
      ->check(in_range("--border", 0, 100))
      ->needs(flag);
  app.add_option("--seed", o.seed, "shift metrics: seed of the shifted pairs")
      ->check(at_least("--seed", 0))
      ->needs(flag);
}

int report_shift_metrics(const EngineOptions& engine, const std::vector<std::string>& paths,
                         const std::vector<Checkpoint>& checkpoints, const ShiftMetricsOptions& options,
                         const std::string& data_dir, const c10::Device& device, bool json) {
  ShiftMetricsOptions o = options;
  o.equivariance.seed = o.seed;
  const MnistDigits test = load_mnist(data_dir, Split::Test);
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    ProgressBar bar("shift metrics " + paths[i], !json);
    const ShiftMetrics m = shift_metrics(engine, checkpoints[i].model, test, o, device,
                                         [&](int64_t done, int64_t total) { bar.update(done, total); });
    bar.finish();
    if (json)
      std::cout << json_line(metrics_json(paths[i], checkpoints[i], o, m)) << std::endl;
    else
      print_metrics(paths[i], m, o);
  }
  return 0;
}

}  // namespace translution::cli
