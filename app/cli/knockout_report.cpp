#include "cli/knockout_report.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "cli/command_line.h"
#include "cli/json_line.h"
#include "cli/progress_bar.h"
#include "data/batches.h"
#include "data/mnist_provision.h"
#include "image/heat_map.h"
#include "image/png_io.h"
#include "infer/offset_importance.h"
#include "train/evaluate.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

// Images per forward. On the CPU one: each offset matrix then meets at most N rows
// (the pairs at its offset), which the engine's row kernel multiplies in cache
// (cpu/avx512_gemm.h); batches send them to BLAS as large products, slower on
// the CPUs measured (docs/performance.md, "Offset knockout maps"). A GPU wants batches.
constexpr int64_t kKnockoutBatchCpu = 1, kKnockoutBatchGpu = 250;
constexpr int64_t kHeatMapCell = 24;  // pixels per offset in the PNG
constexpr size_t kSummaryRows = 10;

volatile std::sig_atomic_t stop_requested = 0;
void on_interrupt(int) { stop_requested = 1; }

// Ctrl-C asks the work to stop at the next offset instead of ending the process,
// so no file is left half-written; the default action returns with the scope.
struct InterruptScope {
  InterruptScope() {
    stop_requested = 0;
    std::signal(SIGINT, on_interrupt);
  }
  ~InterruptScope() { std::signal(SIGINT, SIG_DFL); }
};

struct Outputs {
  std::string csv, png;
};

// knockout-STEM.csv and .png in the folder, checked before any work starts.
std::vector<Outputs> outputs_for(const std::vector<std::string>& paths, const std::string& folder) {
  if (!std::filesystem::is_directory(folder)) throw Error("--out " + folder + " is not a folder");
  std::vector<Outputs> out;
  std::set<std::string> stems;
  for (const std::string& path : paths) {
    const std::string stem = std::filesystem::path(path).stem().string();
    if (!stems.insert(stem).second)
      throw Error("two checkpoints are named " + stem + ": their knockout maps would share a file in " +
                  folder);
    const std::string base = (std::filesystem::path(folder) / ("knockout-" + stem)).string();
    out.push_back({checked_output_path(base + ".csv"), checked_output_path(base + ".png")});
  }
  return out;
}

void write_csv(const std::string& path, const OffsetImportance& r) {
  write_file_atomically(path, [&](const std::string& temp) {
    std::ofstream f(temp);
    f << "dy,dx,accuracy,accuracy_drop,logit_drop\n";
    for (size_t i = 0; i < r.offsets.size(); ++i)
      f << r.offsets[i].dy << ',' << r.offsets[i].dx << ',' << r.accuracy[i] << ',' << r.accuracy_drop[i]
        << ',' << r.logit_drop[i] << '\n';
    f.flush();
    if (!f) throw Error("could not write " + path);
  });
}

// The accuracy drop on the offset grid, from no drop (or the largest gain) to the largest drop.
std::pair<double, double> write_heat_map(const std::string& path, const OffsetImportance& r) {
  const auto [least, most] = std::minmax_element(r.accuracy_drop.begin(), r.accuracy_drop.end());
  const double low = std::min(0.0, *least), high = std::max(*most, low + 1e-3);
  write_png_rgb(path, heat_map_rgb(r.grid(r.accuracy_drop), low, high, kHeatMapCell));
  return {low, high};
}

// Offsets by accuracy drop, then by logit drop, largest first.
std::vector<size_t> ranked(const OffsetImportance& r) {
  std::vector<size_t> order(r.offsets.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (r.accuracy_drop[a] != r.accuracy_drop[b]) return r.accuracy_drop[a] > r.accuracy_drop[b];
    return r.logit_drop[a] > r.logit_drop[b];
  });
  return order;
}

struct Report {
  std::string path, model, dataset, replacement, precision;
  OffsetImportance importance;
  Outputs files;
  std::pair<double, double> scale;
  double seconds = 0;
};

void print_text(const Report& k) {
  const OffsetImportance& r = k.importance;
  std::printf(
      "%s (%s) on %s test, %lld digits, %s, knocked-out matrices set to %s: intact accuracy %.2f%%, "
      "true-class logit %.3f\n",
      k.path.c_str(), k.model.c_str(), k.dataset.c_str(), (long long)r.digits,
      k.precision == "bf16" ? "offset matrices as bfloat16" : "fp32", k.replacement.c_str(),
      100 * r.baseline_accuracy, r.baseline_logit);
  std::printf("  each offset alone (its q, k and v matrices in every layer), the %zu that matter most:\n",
              std::min(kSummaryRows, r.offsets.size()));
  std::printf("    %-10s %9s %12s %11s\n", "(dy, dx)", "accuracy", "drop (pts)", "logit drop");
  const std::vector<size_t> order = ranked(r);
  for (size_t n = 0; n < std::min(kSummaryRows, order.size()); ++n) {
    const size_t i = order[n];
    std::printf("    (%2lld, %2lld)   %8.2f%% %12.2f %11.3f\n", (long long)r.offsets[i].dy,
                (long long)r.offsets[i].dx, 100 * r.accuracy[i], 100 * r.accuracy_drop[i], r.logit_drop[i]);
  }
  const double mean =
      std::accumulate(r.accuracy_drop.begin(), r.accuracy_drop.end(), 0.0) / double(r.offsets.size());
  // One point or more, with a margin for the rounding of differences such as 0.944 - 0.934.
  const auto large = std::count_if(r.accuracy_drop.begin(), r.accuracy_drop.end(),
                                   [](double d) { return d >= 0.01 - 1e-9; });
  std::printf("  mean drop over %zu offsets %.2f points; %lld offsets drop it by 1 point or more\n",
              r.offsets.size(), 100 * mean, (long long)large);
  std::printf("  wrote %s and %s (accuracy drop, %.2f to %.2f points) in %.0f s\n", k.files.csv.c_str(),
              k.files.png.c_str(), 100 * k.scale.first, 100 * k.scale.second, k.seconds);
}

void print_json(const Report& k) {
  const OffsetImportance& r = k.importance;
  nlohmann::ordered_json offsets = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.offsets.size(); ++i)
    offsets.push_back({{"dy", r.offsets[i].dy},
                       {"dx", r.offsets[i].dx},
                       {"accuracy", r.accuracy[i]},
                       {"accuracy_drop", r.accuracy_drop[i]},
                       {"logit_drop", r.logit_drop[i]}});
  const nlohmann::ordered_json out = {{"checkpoint", k.path},
                                      {"model", k.model},
                                      {"dataset", k.dataset},
                                      {"samples", r.digits},
                                      {"replacement", k.replacement},
                                      {"precision", k.precision},
                                      {"baseline_accuracy", r.baseline_accuracy},
                                      {"baseline_logit", r.baseline_logit},
                                      {"seconds", k.seconds},
                                      {"csv", k.files.csv},
                                      {"png", k.files.png},
                                      {"offsets", offsets}};
  std::cout << json_line(out) << std::endl;
}

// One checkpoint's map; false when Ctrl-C stopped it (nothing written then).
bool run_one(const EngineOptions& engine, Report& k, Checkpoint& c, const KnockoutOptions& o,
             const KnockoutRun& run) {
  const auto start = std::chrono::steady_clock::now();
  CanvasDataset test = dataset_for_model(c.config, k.dataset, Split::Test, run.data_dir);
  const int64_t digits = evaluation_size(test, run.samples > 0 ? run.samples : kKnockoutDigits);
  const Batch b = make_range_batch(test, 0, digits, run.device);
  ProgressBar bar("knockout " + std::filesystem::path(k.path).stem().string(), !run.json);
  const int64_t batch = run.device.is_cpu() ? kKnockoutBatchCpu : kKnockoutBatchGpu;
  const auto progress = [&](int64_t done, int64_t total) {
    bar.update(done, total);
    return stop_requested == 0;
  };
  k.importance = offset_importance(engine, c.model, b.images, b.labels, parse_replacement(o.replacement),
                                   batch, run.bf16, progress);
  bar.finish();
  if (!k.importance.complete) return false;
  write_csv(k.files.csv, k.importance);
  k.scale = write_heat_map(k.files.png, k.importance);
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

std::string trained_on(const Checkpoint& c) {
  const auto it = c.metadata.find("dataset");
  return it == c.metadata.end() ? std::string("dynamic") : it->second;
}

}  // namespace

void add_knockout_options(CLI::App& eval, KnockoutOptions& o) {
  CLI::Option* flag = eval.add_flag(
      "--knockout", o.enabled,
      "offset importance: each offset's q, k, v matrices knocked out in every layer, alone; accuracy and "
      "true-class logit drop over --samples digits (" +
          std::to_string(kKnockoutDigits) + " when 0), written as a CSV and a heat map into --out");
  // Another mode of eval's cannot go with it.
  for (const char* other : {"--protocol", "--shift-metrics"})
    if (CLI::Option* option = eval.get_option_no_throw(other)) flag->excludes(option);
  eval.add_option("--out", o.out, "with --knockout: the folder for knockout-NAME.csv and knockout-NAME.png")
      ->type_name("DIR")
      ->capture_default_str()
      ->needs(flag);
  add_choice(
      eval, "--replacement", o.replacement, {"zero", "mean"},
      "with --knockout: what replaces a knocked-out matrix: zero (the offset adds nothing), or the mean of "
      "the bank's offset matrices (only what is specific to that offset goes)")
      ->needs(flag);
}

int knockout_report(const EngineOptions& engine, const std::vector<std::string>& paths,
                    std::vector<Checkpoint>& checkpoints, const KnockoutOptions& o, const KnockoutRun& run) {
  const std::vector<Outputs> files = outputs_for(paths, o.out);
  std::vector<std::string> inputs = mnist_paths(run.data_dir), outputs;
  inputs.insert(inputs.end(), paths.begin(), paths.end());
  for (const Outputs& f : files) outputs.insert(outputs.end(), {f.csv, f.png});
  refuse_inputs_as_outputs(inputs, outputs);  // a link in --out may point at a checkpoint or MNIST file
  const InterruptScope interrupt;
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    Report k{paths[i],
             checkpoints[i].config.model,
             run.dataset.empty() ? trained_on(checkpoints[i]) : run.dataset,
             o.replacement,
             run.bf16 ? "bf16" : "fp32",
             {},
             files[i],
             {},
             0};
    if (!run_one(engine, k, checkpoints[i], o, run)) {
      std::fprintf(stderr, "stopped (Ctrl-C) at %zu of %zu offsets of %s: no file written for it\n",
                   k.importance.accuracy.size(), k.importance.offsets.size(), paths[i].c_str());
      return 130;
    }
    if (run.json)
      print_json(k);
    else
      print_text(k);
  }
  return 0;
}

}  // namespace translution::cli
