#include "cli/resume_checks.h"

#include <map>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/key_value.h"

namespace translution::cli {
namespace {

using Fields = std::map<std::string, std::string>;

Fields fields_of(const std::string& text, const std::string& what) {
  Fields out;
  for (auto& [key, value] : parse_key_values(text, what)) out[key] = value;
  return out;
}

// Each option and the config fields it sets.
const std::vector<std::pair<std::string, std::vector<std::string>>>& model_fields() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"--model", {"model"}},
      {"--preset", {"preset"}},
      {"--image", {"image_height", "image_width"}},
      {"--patch", {"patch"}},
      {"--depth", {"depth"}},
      {"--layout", {"layout"}},
      {"--dim", {"dim"}},
      {"--heads", {"heads"}},
      {"--head-dim", {"head_dim"}},
      {"--mlp-dim", {"mlp_dim"}},
      {"--channels", {"channels"}},
      {"--classes", {"classes"}},
      {"--lor-dim", {"lor_c1", "lor_c2"}},
      {"--lor-dims", {"lor_c1", "lor_c2"}},
      {"--no-lor-shared", {"lor_shared"}},
      {"--lor-value-slices", {"lor_value_slices"}},
      {"--first-model", {"first_model"}},
      {"--first-blocks", {"first_blocks"}}};
  return table;
}

const std::vector<std::pair<std::string, std::string>>& schedule_fields() {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"--dataset", "dataset"},
      {"--epochs", "epochs"},
      {"--batch", "batch"},
      {"--lr", "lr"},
      {"--weight-decay", "weight_decay"},
      {"--warmup", "warmup_steps"},
      {"--min-lr", "min_lr"},
      {"--clip", "clip_norm"},
      {"--seed", "seed"},
      {"--data-seed", "data_seed"},
      {"--train-samples", "train_samples"},
      {"--eval-every", "eval_every"},
      {"--eval-samples", "eval_samples"},
      {"--checkpoint-every", "checkpoint_every"}};
  return table;
}

[[noreturn]] void conflict(const std::string& option, const std::string& key, const std::string& mine,
                           const std::string& saved, const std::string& path) {
  throw Error(option + " gives " + key + "=" + mine + " but " + path + " was trained with " + key + "=" +
              saved + "; a resumed run keeps its model and schedule: leave " + option +
              " out, or start a new run");
}

void check_model(const ModelOptions& model, const std::function<bool(const std::string&)>& given,
                 const ViTConfig& saved, const std::string& path) {
  ModelOptions typed = model;  // what the options given make of the checkpoint's model and preset
  if (!given("--model")) typed.model = saved.model;
  if (!given("--preset")) typed.preset = saved.preset;
  const Fields mine = fields_of(typed.config().to_text(), "the options"),
               theirs = fields_of(saved.to_text(), path);
  for (const auto& [option, keys] : model_fields()) {
    if (!given(option)) continue;
    for (const std::string& key : keys)
      if (mine.at(key) != theirs.at(key)) conflict(option, key, mine.at(key), theirs.at(key), path);
  }
}

}  // namespace

void check_resume_options(const ModelOptions& model, const TrainConfig& schedule,
                          const std::function<bool(const std::string&)>& given, const Checkpoint& checkpoint,
                          const std::string& path) {
  if (!checkpoint.training)
    throw Error(path +
                " holds weights only (no training state) and cannot be resumed; train a new run from it "
                "with --out");
  const TrainingState& state = *checkpoint.training;
  if (given("--steps") && schedule.steps < state.step)
    throw Error("--steps " + std::to_string(schedule.steps) + " is below the " + std::to_string(state.step) +
                " steps " + path + " has already done; give --steps " + std::to_string(state.step) +
                " or more to extend it");
  check_model(model, given, checkpoint.config, path);
  const Fields mine = fields_of(schedule.to_text(), "the options"),
               theirs = fields_of(state.config.to_text(), path);
  for (const auto& [option, key] : schedule_fields())
    if (given(option) && mine.at(key) != theirs.at(key))
      conflict(option, key, mine.at(key), theirs.at(key), path);
}

}  // namespace translution::cli
