// `translution eval`
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/knockout_report.h"
#include "cli/memory_check.h"
#include "cli/progress_bar.h"
#include "cli/shift_metrics_report.h"
#include "cpu/bf16_weights.h"
#include "data/mnist_provision.h"
#include "nn/attention.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "util/device.h"
#include "util/error.h"

namespace translution::cli {
namespace {

struct EvalOptions {
  std::string checkpoint;
  std::vector<std::string> more;  // checkpoints named after --checkpoint's
  std::string dataset, device = "auto", data_dir = default_mnist_dir(), precision = "fp32";
  int64_t samples = 0;
  bool protocol = false, force = false, json = false;
  bool shift_metrics = false;
  ShiftMetricsOptions shift;
  KnockoutOptions knockout;
};

constexpr int64_t kEvalBatch = 256;  // images per forward

std::string trained_on(const Checkpoint& c) {
  const auto it = c.metadata.find("dataset");
  return it == c.metadata.end() ? std::string("unknown") : it->second;
}

// With --precision bf16: the checkpoint's bfloat16 copies, made once (the
// precision and the device are checked before any checkpoint loads).
std::optional<Bf16Weights> weights_for(const Checkpoint& c, const std::string& path, bool bf16) {
  if (!bf16) return std::nullopt;
  std::optional<Bf16Weights> weights(std::in_place, relative_banks(*c.model));
  if (weights->banks() == 0)
    throw Error("--precision bf16 reads offset matrices whose width is a multiple of 32 as bfloat16; " +
                path + " (" + c.config.model + ") has none (use --precision fp32)");
  return weights;
}

EvalResult run_eval(const EngineOptions& engine, const Checkpoint& c, const std::string& dataset,
                    const EvalOptions& o, const c10::Device& device,
                    const std::optional<Bf16Weights>& weights) {
  CanvasDataset test = dataset_for_model(c.config, dataset, Split::Test, o.data_dir);
  EngineOptions options = engine;
  options.bf16_weights = weights ? &*weights : nullptr;
  ProgressBar bar("eval " + dataset, !o.json);
  const EvalResult r = evaluate(options, c.model, test, o.samples, kEvalBatch, device,
                                [&](int64_t done, int64_t total) { bar.update(done, total); });
  bar.finish();
  return r;
}

nlohmann::ordered_json confusion_json(const at::Tensor& confusion) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int64_t i = 0; i < confusion.size(0); ++i) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int64_t j = 0; j < confusion.size(1); ++j) row.push_back(confusion[i][j].item<int64_t>());
    out.push_back(row);
  }
  return out;
}

void print_result(const std::string& name, const std::string& dataset, const std::string& precision,
                  const EvalResult& r) {
  std::printf("%s on %s test (%lld digits%s): accuracy %.2f%%, loss %.4f\n", name.c_str(), dataset.c_str(),
              (long long)r.count, precision == "bf16" ? ", bfloat16 offset matrices" : "", 100 * r.accuracy,
              r.loss);
  std::printf("  per class:");
  for (size_t k = 0; k < r.class_accuracy.size(); ++k) std::printf(" %zu:%.1f", k, 100 * r.class_accuracy[k]);
  std::printf("\n  confusion (rows true 0-9, columns predicted 0-9):\n");
  for (int64_t i = 0; i < r.confusion.size(0); ++i) {
    std::printf("   ");
    for (int64_t j = 0; j < r.confusion.size(1); ++j)
      std::printf(" %5lld", (long long)r.confusion[i][j].item<int64_t>());
    std::printf("\n");
  }
}

int protocol(const EngineOptions& engine, const std::vector<std::string>& paths,
             const std::vector<Checkpoint>& checkpoints, const EvalOptions& o, const c10::Device& device,
             bool bf16) {
  const bool json = o.json;
  std::map<std::string, double> cell;  // "train->test" -> accuracy
  if (!json)
    std::printf("%-28s %-10s %9s %9s %9s\n", "checkpoint", "trained on", "static", "dynamic", "moving");
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const std::string train = trained_on(checkpoints[i]);
    nlohmann::ordered_json row = {{"checkpoint", paths[i]},
                                  {"model", checkpoints[i].config.model},
                                  {"trained_on", train},
                                  {"precision", bf16 ? "bf16" : "fp32"}};
    if (!json) std::printf("%-28s %-10s", paths[i].c_str(), train.c_str());
    const std::optional<Bf16Weights> weights = weights_for(checkpoints[i], paths[i], bf16);
    for (const char* test : {"static", "dynamic", "moving"}) {
      const double a = run_eval(engine, checkpoints[i], test, o, device, weights).accuracy;
      cell[train + "->" + test] = a;
      row[test] = a;
      if (!json) {
        std::printf(" %8.2f%%", 100 * a);
        std::fflush(stdout);
      }
    }
    if (json)
      std::cout << json_line(row) << std::endl;
    else
      std::printf("\n");
  }
  nlohmann::ordered_json summary = {{"protocol", "table2"}};
  if (!json) std::printf("\npapers' protocol (train -> test)%s:\n", bf16 ? ", bfloat16 offset matrices" : "");
  for (const char* name : {"static->static", "dynamic->dynamic", "static->dynamic"}) {
    const auto it = cell.find(name);
    const double a = it == cell.end() ? std::nan("") : it->second;
    summary[name] = a;
    if (json) continue;
    if (it == cell.end())
      std::printf("  %-18s not measured: give a checkpoint trained on %s\n", name,
                  std::string(name).substr(0, std::string(name).find('-')).c_str());
    else
      std::printf("  %-18s %.2f%%\n", name, 100 * a);
  }
  if (json) std::cout << json_line(summary) << std::endl;
  return 0;
}

int evaluate_checkpoints(const EvalOptions& o) {
  const c10::Device device = parse_device(o.device);
  const bool bf16 = o.precision == "bf16";
  if (bf16 && !device.is_cpu())
    throw Error("--precision bf16 reads bfloat16 weights on the CPU; with " + device.str() +
                " use --device cpu (or --precision fp32)");
  if (bf16 && !bf16_weights_available())
    throw Error(
        "--precision bf16 reads bfloat16 weights with AVX-512, which this CPU lacks; use --precision fp32");
  if (bf16 && o.shift_metrics)
    throw Error("--shift-metrics runs the models in fp32; leave out --precision bf16");
  std::vector<std::string> paths{o.checkpoint};
  paths.insert(paths.end(), o.more.begin(), o.more.end());
  const EngineOptions engine;  // eval has no flags for them but --precision: the defaults
  check_checkpoints(engine, o.force, paths, kEvalBatch, "", device);
  std::vector<Checkpoint> checkpoints;
  for (const auto& p : paths) checkpoints.push_back(load_checkpoint(p, device));
  if (o.knockout.enabled)
    return knockout_report(engine, paths, checkpoints, o.knockout,
                           {o.dataset, o.samples, o.data_dir, o.json, device, bf16});
  if (o.protocol) return protocol(engine, paths, checkpoints, o, device, bf16);
  if (o.shift_metrics)
    return report_shift_metrics(engine, paths, checkpoints, o.shift, o.data_dir, device, o.json);
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const std::string trained = trained_on(checkpoints[i]);
    const std::string dataset = !o.dataset.empty() ? o.dataset : trained == "unknown" ? "dynamic" : trained;
    const EvalResult r =
        run_eval(engine, checkpoints[i], dataset, o, device, weights_for(checkpoints[i], paths[i], bf16));
    if (!o.json) {
      print_result(paths[i], dataset, o.precision, r);
      continue;
    }
    const nlohmann::ordered_json out = {{"checkpoint", paths[i]},
                                        {"model", checkpoints[i].config.model},
                                        {"dataset", dataset},
                                        {"precision", o.precision},
                                        {"samples", r.count},
                                        {"accuracy", r.accuracy},
                                        {"loss", r.loss},
                                        {"class_accuracy", r.class_accuracy},
                                        {"confusion", confusion_json(r.confusion)}};
    std::cout << json_line(out) << std::endl;
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& root, Runners& runners) {
  CLI::App* app = root.add_subcommand("eval", "accuracy, per-class accuracy and confusion on a test set");
  auto o = std::make_shared<EvalOptions>();
  app->add_option("--checkpoint", o->checkpoint, "the model")->required()->type_name("FILE.ckpt");
  app->add_option("more", o->more, "more checkpoints to evaluate")->type_name("MORE.ckpt...");
  add_choice(*app, "--dataset", o->dataset, {"static", "dynamic", "moving", "mnist"},
             "test set (default: the one the checkpoint was trained on)");
  app->add_flag("--protocol", o->protocol, "the papers' static/dynamic protocol over every checkpoint");
  app->add_option("--samples", o->samples, "the first N test digits (0: all)")
      ->check(in_range("--samples", 0, 10000));  // MNIST's test split
  add_device(*app, o->device);
  app->add_option("--data-dir", o->data_dir, "MNIST folder");
  add_choice(*app, "--precision", o->precision, {"fp32", "bf16"},
             "bf16: Translution's offset matrices as bfloat16");
  app->add_flag("--force", o->force, kForceHelp);
  app->add_flag("--json", o->json, "print one JSON object per checkpoint");
  add_shift_metrics_options(*app, o->shift_metrics, o->shift);
  add_knockout_options(*app, o->knockout);
  runners[app] = [o] { return evaluate_checkpoints(*o); };
}

}  // namespace translution::cli
