// `translution checkpoint info|strip|diff|upgrade`
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/memory_check.h"
#include "train/checkpoint.h"
#include "train/checkpoint_upgrade.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

// Reports tensors holding NaN or infinity instead of refusing the file, as every other use does.
int info(const std::string& path, bool json) {
  if (path.empty()) throw Error("checkpoint info needs one file");
  check_checkpoints_to_open({path});
  std::vector<std::string> non_finite;
  const Checkpoint c = inspect_checkpoint(path, &non_finite);
  if (json) {
    nlohmann::ordered_json out = {{"checkpoint", path},
                                  {"model", c.config.model},
                                  {"preset", c.config.preset},
                                  {"parameters", c.model->parameter_count()}};
    for (const auto& [k, v] : c.metadata) out["meta_" + k] = v;
    if (c.training) {
      out["step"] = c.training->step;
      out["total_steps"] = c.training->config.total_steps();
    }
    out["non_finite"] = non_finite;
    std::cout << json_line(out) << std::endl;
    return 0;
  }
  std::printf("%s\nmodel (%lld parameters):\n%s", printable(path).c_str(),
              (long long)c.model->parameter_count(), c.config.to_text().c_str());
  std::printf("metadata:\n");
  // Metadata is a file's text: a stranger's checkpoint must not drive the terminal.
  for (const auto& [k, v] : c.metadata) std::printf("%s=%s\n", printable(k).c_str(), printable(v).c_str());
  if (c.training) {
    std::printf("training: step %lld of %lld, %zu curve points, AdamW state for %zu parameters\n%s",
                (long long)c.training->step, (long long)c.training->config.total_steps(),
                c.training->history.size(), c.training->optimizer.size(),
                c.training->config.to_text().c_str());
  } else {
    std::printf("training: none (weights only)\n");
  }
  for (const std::string& what : non_finite) std::printf("not finite: %s\n", what.c_str());
  if (!non_finite.empty())
    std::printf("every other command refuses this file: %zu tensors hold NaN or infinity\n",
                non_finite.size());
  return 0;
}

int strip(const std::string& path, const std::string& out) {
  if (path.empty()) throw Error("checkpoint strip needs one input file");
  check_checkpoints_to_open({path});
  Checkpoint c = load_checkpoint(path);
  if (c.training) c.metadata["trained_steps"] = std::to_string(c.training->step);
  c.training.reset();
  save_checkpoint(out, c);
  return 0;
}

// How far apart two checkpoints' weights are: the largest absolute difference over
// every parameter, the tensor where it is, and that tensor's largest value
// (to read the difference against). Both must be the same model. NaN or infinity
// on either side makes the difference NaN, named by the first tensor that has one.
int diff(const std::string& a_path, const std::string& b_path, bool json) {
  if (a_path.empty() || b_path.empty()) throw Error("checkpoint diff needs two files");
  check_checkpoints_to_open({a_path, b_path});
  std::vector<std::string> unused;
  const Checkpoint a = inspect_checkpoint(a_path, &unused), b = inspect_checkpoint(b_path, &unused);
  if (!(a.config == b.config))
    throw Error(a_path + " and " + b_path +
                " hold different models (their configs differ): nothing to compare");
  const auto wa = a.model->named_parameters(), wb = b.model->named_parameters();
  double largest = 0, scale = 0;
  std::string where = "(none)";
  bool equal = true;
  for (const auto& item : wa) {
    const at::Tensor x = item.value().detach().to(at::kDouble), y = wb[item.key()].detach().to(at::kDouble);
    equal = equal && at::equal(x, y);
    if (std::isnan(largest)) continue;  // the first tensor with NaN keeps the answer
    const bool finite = non_finite_value(x).empty() && non_finite_value(y).empty();
    const double d = finite ? (x - y).abs().max().item<double>() : std::nan("");
    if (std::isnan(d) || d > largest || where == "(none)") {
      largest = d;
      where = item.key();
      scale = x.abs().max().item<double>();
    }
  }
  if (json) {
    // JSON has no NaN: null stands for it.
    nlohmann::ordered_json out{{"identical", equal},
                               {"max_abs_difference", largest},
                               {"tensor", where},
                               {"tensor_max_abs", scale},
                               {"not_finite", std::isnan(largest)}};
    std::cout << json_line(out) << std::endl;
    return 0;
  }
  std::printf("%s: largest |difference| %.3g in %s (whose largest |value| is %.3g)%s\n",
              equal ? "identical weights" : "weights differ", largest, where.c_str(), scale,
              std::isnan(largest) ? "; one side holds NaN or infinity there" : "");
  return 0;
}

// Format 1 (a LibTorch archive) to the current format, read by the project's own bounded readers.
int upgrade(const std::string& old_path, const std::string& new_path) {
  if (old_path.empty() || new_path.empty())
    throw Error("checkpoint upgrade needs the old file and the new one");
  const Checkpoint c = read_format1_checkpoint(old_path);
  save_checkpoint(new_path, c);
  const std::string what = c.training ? "with its training state at step " +
                                            std::to_string(c.training->step) + " (AdamW state for " +
                                            std::to_string(c.training->optimizer.size()) + " parameters)"
                                      : "weights only, as it was (no training state)";
  std::printf("%s (format 1) -> %s (format %lld): %s %s, %lld parameters, %s\n", old_path.c_str(),
              new_path.c_str(), (long long)kCheckpointFormat, c.config.model.c_str(), c.config.preset.c_str(),
              (long long)c.model->parameter_count(), what.c_str());
  return 0;
}

}  // namespace

void add_checkpoint_command(CLI::App& root, Runners& runners) {
  CLI::App* checkpoint = root.add_subcommand("checkpoint", "inspect, strip, compare or upgrade checkpoints");
  struct Options {
    std::string file, out;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* info_app = checkpoint->add_subcommand("info", "model config, metadata and training state");
  info_app->add_option("file", o->file, "the checkpoint")->type_name("FILE.ckpt");
  info_app->add_flag("--json", o->json, "print one JSON object");
  runners[info_app] = [o] { return info(o->file, o->json); };
  CLI::App* strip_app =
      checkpoint->add_subcommand("strip", "keep weights, config and metadata; drop the training state");
  strip_app->add_option("file", o->file, "the checkpoint")->type_name("FILE.ckpt");
  strip_app->add_option("--out", o->out, "weights-only file to write")->required();
  runners[strip_app] = [o] {
    checked_output_path(o->out);  // before the input is read: a refusal costs nothing
    refuse_input_as_output(o->file, o->out);
    return strip(o->file, o->out);
  };
  CLI::App* diff_app = checkpoint->add_subcommand("diff", "how far apart two checkpoints' weights are");
  diff_app->add_option("file", o->file, "one checkpoint")->type_name("A.ckpt")->required();
  diff_app->add_option("other", o->out, "the other")->type_name("B.ckpt")->required();
  diff_app->add_flag("--json", o->json, "print one JSON object");
  runners[diff_app] = [o] { return diff(o->file, o->out, o->json); };
  CLI::App* upgrade_app = checkpoint->add_subcommand(
      "upgrade", "convert a checkpoint of format 1 (a LibTorch archive) to the current format (safetensors)");
  upgrade_app->add_option("file", o->file, "the format-1 checkpoint")->type_name("OLD.ckpt")->required();
  upgrade_app->add_option("out", o->out, "the checkpoint to write")->type_name("NEW.ckpt")->required();
  runners[upgrade_app] = [o] {
    checked_output_path(o->out);
    refuse_input_as_output(o->file, o->out);
    return upgrade(o->file, o->out);
  };
}

}  // namespace translution::cli
