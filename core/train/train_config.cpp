#include "train/train_config.h"

#include <cmath>
#include <limits>
#include <utility>

#include "cpu/bf16_gemm.h"
#include "data/canvas_dataset.h"
#include "util/error.h"
#include "util/key_value.h"

namespace translution {
namespace {

constexpr int64_t kMnistTrainDigits = 60000;

const std::vector<KeyValueField<TrainConfig>>& fields() {
  using T = TrainConfig;
  static const std::vector<KeyValueField<T>> f = {
      string_field("dataset", &T::dataset),
      int_field("data_seed", &T::data_seed),
      bool_field("fresh_positions", &T::fresh_positions),
      int_field("train_samples", &T::train_samples),
      int_field("epochs", &T::epochs),
      int_field("steps", &T::steps),
      int_field("batch", &T::batch),
      double_field("lr", &T::lr),
      double_field("weight_decay", &T::weight_decay),
      int_field("warmup_steps", &T::warmup_steps),
      double_field("min_lr", &T::min_lr),
      double_field("clip_norm", &T::clip_norm),
      int_field("seed", &T::seed),
      int_field("eval_every", &T::eval_every),
      int_field("eval_samples", &T::eval_samples),
      int_field("checkpoint_every", &T::checkpoint_every),
      string_field("precision", &T::precision),
  };
  return f;
}

}  // namespace

int64_t training_digits(const TrainConfig& c) {
  return c.train_samples > 0 ? std::min(c.train_samples, kMnistTrainDigits) : kMnistTrainDigits;
}

uint64_t training_placement_seed(const TrainConfig& c, int64_t epoch) {
  if (!c.fresh_positions) return uint64_t(c.data_seed);
  // Odd multiplier: distinct epochs give distinct seeds, none equal to data_seed's own.
  return uint64_t(c.data_seed) ^ (0x9E3779B97F4A7C15ull * uint64_t(epoch + 1));
}

int64_t TrainConfig::steps_per_epoch() const { return (training_digits(*this) + batch - 1) / batch; }

int64_t TrainConfig::total_steps() const { return steps > 0 ? steps : epochs * steps_per_epoch(); }

int64_t TrainConfig::eval_interval() const { return eval_every > 0 ? eval_every : steps_per_epoch(); }

std::string TrainConfig::to_text() const { return fields_to_text(*this, fields()); }

TrainConfig TrainConfig::from_text(const std::string& text) {
  TrainConfig c;
  fields_from_text(c, text, fields(), "training config");
  c.validate();
  return c;
}

void TrainConfig::validate() const {
  parse_canvas_kind(dataset);  // names the bad dataset
  auto at_least = [](const char* what, double v, double low) {
    if (!(v >= low))
      throw Error(std::string("training: ") + what + " must be at least " + format_double(low) + ", got " +
                  format_double(v));
  };
  at_least("batch", double(batch), 1);
  at_least("epochs", double(epochs), steps > 0 ? 0 : 1);
  at_least("steps", double(steps), 0);
  at_least("train_samples", double(train_samples), 0);
  at_least("warmup_steps", double(warmup_steps), 0);
  at_least("eval_every", double(eval_every), 0);
  at_least("eval_samples", double(eval_samples), 0);
  at_least("checkpoint_every", double(checkpoint_every), 0);
  // Before total_steps(), whose product would overflow.
  if (steps > kMaxTrainSteps || (steps == 0 && epochs > kMaxTrainSteps / steps_per_epoch()))
    throw Error("training: the run has more than " + std::to_string(kMaxTrainSteps) + " steps (" +
                (steps > 0
                     ? "steps " + std::to_string(steps)
                     : "epochs " + std::to_string(epochs) + " of " + std::to_string(steps_per_epoch())) +
                ")");
  // A learning rate or decay that is not finite poisons the first step; NaN already fails the bounds.
  for (const auto& [what, v] :
       {std::pair{"lr", lr}, {"weight_decay", weight_decay}, {"min_lr", min_lr}, {"clip_norm", clip_norm}})
    if (!std::isfinite(v))
      throw Error(std::string("training: ") + what + " must be a finite number, got " + format_double(v));
  // AdamW and the clip compute in float: a value beyond its range overflows mid-step.
  for (const auto& [what, v] :
       {std::pair{"lr", lr}, {"weight_decay", weight_decay}, {"min_lr", min_lr}, {"clip_norm", clip_norm}})
    if (std::abs(v) > double(std::numeric_limits<float>::max()))
      throw Error(std::string("training: ") + what + " must be at most " +
                  format_double(double(std::numeric_limits<float>::max())) + " (a float), got " +
                  format_double(v));
  at_least("weight_decay", weight_decay, 0);
  at_least("clip_norm", clip_norm, 0);
  at_least("min_lr", min_lr, 0);
  if (!valid_dense_precision_name(precision) && precision != "tf32" && precision != "bf16-autocast")
    throw Error("training: precision must be fp32, bf16, bf16-autocast or tf32, got '" + precision + "'");
  if (!(lr > 0)) throw Error("training: lr must be positive, got " + format_double(lr));
  if (min_lr > lr)
    throw Error("training: min_lr (" + format_double(min_lr) + ") exceeds lr (" + format_double(lr) + ")");
  if (warmup_steps > total_steps())
    throw Error("training: warmup_steps (" + std::to_string(warmup_steps) + ") exceeds the run's " +
                std::to_string(total_steps()) + " steps");
}

}  // namespace translution
