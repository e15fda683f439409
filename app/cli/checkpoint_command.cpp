// `translution checkpoint info|strip`
#include <cstdio>
#include <iostream>
#include <memory>

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

}  // namespace

void add_checkpoint_command(CLI::App& root, Runners& runners) {
  CLI::App* checkpoint = root.add_subcommand("checkpoint", "inspect a checkpoint, or strip its training state");
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
}

}  // namespace translution::cli
