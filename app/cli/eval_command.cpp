// `translution eval`
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/memory_check.h"
#include "cli/progress_bar.h"
#include "data/mnist_provision.h"
#include "cpu/bf16_weights.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "util/device.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace translution::cli {
namespace {

const std::string kEvalUsage = R"(usage: translution eval --checkpoint FILE.ckpt [MORE.ckpt ...] [--dataset static|dynamic|moving|mnist]
                        [--protocol] [--samples N] [--device auto|cpu|cuda] [--data-dir DIR]
                        [--precision fp32|bf16] [--force] [--json]

Accuracy, per-class accuracy and the confusion matrix on a test set (default: the
dataset the checkpoint was trained on; --samples limits it to the first N digits).
--precision bf16 reads Translution's offset matrices from bfloat16 copies (half
the memory traffic of one image's forward; activations and sums stay fp32): what
it costs in accuracy, on the CPU with AVX-512.
--protocol evaluates every checkpoint on the static, dynamic and moving test sets
and prints the papers' Table 2 protocol: Static->Static, Dynamic->Dynamic and
Static->Dynamic, each from the checkpoint trained on the set before the arrow
(give a static- and a dynamic-trained checkpoint for all three).
)" + std::string(kForceHelp) + "\n";

constexpr int64_t kEvalBatch = 256;  // images per forward

std::string trained_on(const Checkpoint& c) {
  const auto it = c.metadata.find("dataset");
  return it == c.metadata.end() ? std::string("unknown") : it->second;
}

// With --precision bf16: the checkpoint's bfloat16 copies, made once (the
// precision and the device are checked before any checkpoint loads).
std::optional<Bf16Weights> weights_for(const Checkpoint& c, const std::string& path, bool bf16) {
  if (!bf16) return std::nullopt;
  std::optional<Bf16Weights> weights(std::in_place, *c.model);
  if (weights->banks() == 0)
    throw Error("--precision bf16 reads offset matrices whose width is a multiple of 32 as bfloat16; " + path +
                " (" + c.config.model + ") has none (use --precision fp32)");
  return weights;
}

EvalResult run_eval(const Checkpoint& c, const std::string& dataset, const Args& args, const c10::Device& device,
                    const std::optional<Bf16Weights>& weights) {
  CanvasDataset test = dataset_for_model(c.config, dataset, Split::Test, args.get("data-dir", default_mnist_dir()));
  const ScopedBf16Weights scope(weights ? &*weights : nullptr);
  ProgressBar bar("eval " + dataset, !args.flag("json"));
  const EvalResult r = evaluate(c.model, test, args.get_int("samples", 0), kEvalBatch, device,
                                [&](int64_t done, int64_t total) { bar.update(done, total); });
  bar.finish();
  return r;
}

std::string confusion_json(const at::Tensor& confusion) {
  std::string out = "[";
  for (int64_t i = 0; i < confusion.size(0); ++i) {
    out += i ? ",[" : "[";
    for (int64_t j = 0; j < confusion.size(1); ++j) out += (j ? "," : "") + std::to_string(confusion[i][j].item<int64_t>());
    out += "]";
  }
  return out + "]";
}

void print_result(const std::string& name, const std::string& dataset, const std::string& precision,
                  const EvalResult& r) {
  std::printf("%s on %s test (%lld digits%s): accuracy %.2f%%, loss %.4f\n", name.c_str(), dataset.c_str(),
              (long long)r.count, precision == "bf16" ? ", bfloat16 offset matrices" : "", 100 * r.accuracy, r.loss);
  std::printf("  per class:");
  for (size_t k = 0; k < r.class_accuracy.size(); ++k) std::printf(" %zu:%.1f", k, 100 * r.class_accuracy[k]);
  std::printf("\n  confusion (rows true 0-9, columns predicted 0-9):\n");
  for (int64_t i = 0; i < r.confusion.size(0); ++i) {
    std::printf("   ");
    for (int64_t j = 0; j < r.confusion.size(1); ++j) std::printf(" %5lld", (long long)r.confusion[i][j].item<int64_t>());
    std::printf("\n");
  }
}

int protocol(const std::vector<std::string>& paths, const std::vector<Checkpoint>& checkpoints, const Args& args,
             const c10::Device& device, bool bf16) {
  const bool json = args.flag("json");
  std::map<std::string, double> cell;  // "train->test" -> accuracy
  if (!json) std::printf("%-28s %-10s %9s %9s %9s\n", "checkpoint", "trained on", "static", "dynamic", "moving");
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const std::string train = trained_on(checkpoints[i]);
    JsonWriter row;
    row.add("checkpoint", paths[i]).add("model", checkpoints[i].config.model).add("trained_on", train)
        .add("precision", bf16 ? "bf16" : "fp32");
    if (!json) std::printf("%-28s %-10s", paths[i].c_str(), train.c_str());
    const std::optional<Bf16Weights> weights = weights_for(checkpoints[i], paths[i], bf16);
    for (const char* test : {"static", "dynamic", "moving"}) {
      const double a = run_eval(checkpoints[i], test, args, device, weights).accuracy;
      cell[train + "->" + test] = a;
      row.add(std::string(test), a);
      if (!json) std::printf(" %8.2f%%", 100 * a), std::fflush(stdout);
    }
    if (json) std::cout << row.str() << std::endl;
    else std::printf("\n");
  }
  JsonWriter summary;
  summary.add("protocol", "table2");
  if (!json) std::printf("\npapers' protocol (train -> test)%s:\n", bf16 ? ", bfloat16 offset matrices" : "");
  for (const char* name : {"static->static", "dynamic->dynamic", "static->dynamic"}) {
    const auto it = cell.find(name);
    const double a = it == cell.end() ? std::nan("") : it->second;
    summary.add(name, a);
    if (json) continue;
    if (it == cell.end()) std::printf("  %-18s not measured: give a checkpoint trained on %s\n", name,
                                      std::string(name).substr(0, std::string(name).find('-')).c_str());
    else std::printf("  %-18s %.2f%%\n", name, 100 * a);
  }
  if (json) std::cout << summary.str() << std::endl;
  return 0;
}

}  // namespace

int eval_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kEvalUsage.c_str(), false)) return *status;
  const Args args(words, {"json", "protocol", "force"}, {"checkpoint", "dataset", "samples", "device", "data-dir", "precision"});
  const c10::Device device = parse_device(args.get("device", "auto"));
  const bool bf16 = args.get_choice("precision", {"fp32", "bf16"}) == "bf16";
  if (bf16 && !device.is_cpu())
    throw Error("--precision bf16 reads bfloat16 weights on the CPU; with " + device.str() +
                " use --device cpu (or --precision fp32)");
  if (bf16 && !bf16_weights_available())
    throw Error("--precision bf16 reads bfloat16 weights with AVX-512, which this CPU lacks; use --precision fp32");
  std::vector<std::string> paths{args.require("checkpoint")};
  for (const auto& p : args.positional()) paths.push_back(p);
  check_checkpoints(args, paths, kEvalBatch, "", device);
  std::vector<Checkpoint> checkpoints;
  for (const auto& p : paths) checkpoints.push_back(load_checkpoint(p, device));
  if (args.flag("protocol")) return protocol(paths, checkpoints, args, device, bf16);
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const std::string dataset = args.get("dataset", trained_on(checkpoints[i]) == "unknown" ? "dynamic" : trained_on(checkpoints[i]));
    const EvalResult r = run_eval(checkpoints[i], dataset, args, device, weights_for(checkpoints[i], paths[i], bf16));
    if (args.flag("json"))
      std::cout << JsonWriter().add("checkpoint", paths[i]).add("model", checkpoints[i].config.model)
                       .add("dataset", dataset).add("precision", args.get("precision", "fp32"))
                       .add("samples", r.count).add("accuracy", r.accuracy).add("loss", r.loss)
                       .add("class_accuracy", r.class_accuracy).add_raw("confusion", confusion_json(r.confusion)).str()
                << std::endl;
    else
      print_result(paths[i], dataset, args.get("precision", "fp32"), r);
  }
  return 0;
}

}  // namespace translution::cli
