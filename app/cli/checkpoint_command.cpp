// `translution checkpoint info|strip`
#include <cstdio>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace translution::cli {
namespace {

const char* kCheckpointUsage = R"(usage:
  translution checkpoint info FILE.ckpt [--json]
  translution checkpoint strip FILE.ckpt --out WEIGHTS.ckpt

info: the model config, metadata and training state (step, curves) of a checkpoint.
strip: keeps weights, config and metadata, drops the training state (a file for
shipping, about a third of the size for AdamW-trained models).
)";

int info(const Args& args) {
  if (args.positional().size() != 1) throw Error("checkpoint info needs one file");
  const std::string path = args.positional()[0];
  const Checkpoint c = load_checkpoint(path);
  if (args.flag("json")) {
    JsonWriter w;
    w.add("checkpoint", path).add("model", c.config.model).add("preset", c.config.preset)
        .add("parameters", c.model->parameter_count());
    for (const auto& [k, v] : c.metadata) w.add("meta_" + k, v);
    if (c.training) w.add("step", c.training->step).add("total_steps", c.training->config.total_steps());
    std::cout << w.str() << std::endl;
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

int strip(const Args& args) {
  if (args.positional().size() != 1) throw Error("checkpoint strip needs one input file");
  Checkpoint c = load_checkpoint(args.positional()[0]);
  if (c.training) c.metadata["trained_steps"] = std::to_string(c.training->step);
  c.training.reset();
  save_checkpoint(args.require("out"), c);
  return 0;
}

}  // namespace

int checkpoint_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kCheckpointUsage)) return *status;
  const std::string sub = words[0];
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (sub == "info") return info(Args(rest, {"json"}, {}));
  if (sub == "strip") return strip(Args(rest, {}, {"out"}));
  throw Error("unknown checkpoint command '" + sub + "' (expected info or strip)");
}

}  // namespace translution::cli
