// `translution checkpoint info|strip|diff`
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace translution::cli {
namespace {

int info(const std::string& path, bool json) {
  if (path.empty()) throw Error("checkpoint info needs one file");
  const Checkpoint c = load_checkpoint(path);
  if (json) {
    nlohmann::ordered_json out = {{"checkpoint", path}, {"model", c.config.model}, {"preset", c.config.preset},
                                  {"parameters", c.model->parameter_count()}};
    for (const auto& [k, v] : c.metadata) out["meta_" + k] = v;
    if (c.training) out["step"] = c.training->step, out["total_steps"] = c.training->config.total_steps();
    std::cout << out.dump() << std::endl;
    return 0;
  }
  std::printf("%s\nmodel (%lld parameters):\n%s", path.c_str(), (long long)c.model->parameter_count(),
              c.config.to_text().c_str());
  std::printf("metadata:\n");
  for (const auto& [k, v] : c.metadata) std::printf("%s=%s\n", k.c_str(), v.c_str());
  if (c.training) {
    std::printf("training: step %lld of %lld, %zu curve points\n%s", (long long)c.training->step,
                (long long)c.training->config.total_steps(), c.training->history.size(),
                c.training->config.to_text().c_str());
  } else {
    std::printf("training: none (weights only)\n");
  }
  return 0;
}

int strip(const std::string& path, const std::string& out) {
  if (path.empty()) throw Error("checkpoint strip needs one input file");
  Checkpoint c = load_checkpoint(path);
  if (c.training) c.metadata["trained_steps"] = std::to_string(c.training->step);
  c.training.reset();
  save_checkpoint(out, c);
  return 0;
}

// How far apart two checkpoints' weights are: the largest absolute difference over
// every parameter, the tensor where it is, and that tensor's largest value
// (to read the difference against). Both must be the same model.
int diff(const std::string& a_path, const std::string& b_path, bool json) {
  if (a_path.empty() || b_path.empty()) throw Error("checkpoint diff needs two files");
  const Checkpoint a = load_checkpoint(a_path), b = load_checkpoint(b_path);
  if (!(a.config == b.config))
    throw Error(a_path + " and " + b_path + " hold different models (their configs differ): nothing to compare");
  const auto wa = a.model->named_parameters(), wb = b.model->named_parameters();
  double largest = 0, scale = 0;
  std::string where = "(none)";
  bool equal = true;
  for (const auto& item : wa) {
    const at::Tensor x = item.value().detach().to(at::kDouble), y = wb[item.key()].detach().to(at::kDouble);
    equal = equal && at::equal(x, y);
    const double d = (x - y).abs().max().item<double>();
    if (d > largest || where == "(none)") largest = d, where = item.key(), scale = x.abs().max().item<double>();
  }
  if (json) {
    std::cout << nlohmann::ordered_json{{"identical", equal}, {"max_abs_difference", largest}, {"tensor", where},
                                        {"tensor_max_abs", scale}}.dump()
              << std::endl;
    return 0;
  }
  std::printf("%s: largest |difference| %.3g in %s (whose largest |value| is %.3g)\n",
              equal ? "identical weights" : "weights differ", largest, where.c_str(), scale);
  return 0;
}

}  // namespace

void add_checkpoint_command(CLI::App& root, Runners& runners) {
  CLI::App* checkpoint = root.add_subcommand("checkpoint", "inspect, strip or compare checkpoints");
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
  runners[strip_app] = [o] { return strip(o->file, o->out); };
  CLI::App* diff_app = checkpoint->add_subcommand("diff", "how far apart two checkpoints' weights are");
  diff_app->add_option("file", o->file, "one checkpoint")->type_name("A.ckpt")->required();
  diff_app->add_option("other", o->out, "the other")->type_name("B.ckpt")->required();
  diff_app->add_flag("--json", o->json, "print one JSON object");
  runners[diff_app] = [o] { return diff(o->file, o->out, o->json); };
}

}  // namespace translution::cli
