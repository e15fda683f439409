#pragma once
// One file per trained model: the weights, the model's full config, metadata
// (dataset, metrics, date) and, for runs that can continue, the training state
// (training config, step, AdamW state, RNG, the curves so far).
//
// On disk: safetensors (io/safetensors_file.h), which Python reads with
// safetensors.torch.load_file. Every tensor is a plain named one: the model's
// parameters and buffers under their module paths ("blocks.0.norm1.weight"),
// AdamW's state as "optimizer.<parameter>.exp_avg", ".exp_avg_sq", ".step" (and
// ".max_exp_avg_sq" under amsgrad), "training.rng" and "training.curves". The
// header's "__metadata__" holds the strings: "format" ("translution-checkpoint"),
// "format_version", "config", "metadata" (key=value lines), "train_config",
// "train_step", and the digests that name a damaged header or buffer as such.
// Format 1, a LibTorch archive, opens only through train/checkpoint_upgrade.h.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "nn/vit.h"
#include "train/train_config.h"

namespace translution {

constexpr int64_t kCheckpointFormat = 2;

// One point of a run's curves. Test values are NaN where no evaluation happened.
struct CurvePoint {
  int64_t step = 0;
  double epoch = 0, loss = 0, accuracy = 0, lr = 0;
  double test_loss = 0, test_accuracy = 0;
};

// One parameter's torch::optim::AdamWParamState, as plain tensors of the parameter's
// shape and type; max_exp_avg_sq is defined only under amsgrad.
struct AdamWState {
  int64_t step = 0;
  at::Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
};

struct TrainingState {
  TrainConfig config;
  int64_t step = 0;                             // optimisation steps done
  std::map<std::string, AdamWState> optimizer;  // by parameter path; none before a parameter's first step
  at::Tensor rng;                               // uint8: the CPU generator's state
  std::vector<CurvePoint> history;
};

struct Checkpoint {
  ViTConfig config;
  ViT model{nullptr};
  std::map<std::string, std::string> metadata;  // dataset, test_accuracy, created, ...
  std::optional<TrainingState> training;        // absent in weights-only files
};

// Writes atomically: a reader sees the old file or the complete new one.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Throws translution::Error naming the file and what is wrong, in one line:
// missing or not a regular file, not a checkpoint, format 1 (convert it with
// `translution checkpoint upgrade`), a newer format, truncated, a digest that does
// not match, bad config, a tensor missing, unexpected or of the wrong shape, a
// tensor holding NaN or infinity. Tensors are mapped to `device`.
Checkpoint load_checkpoint(const std::string& path, const c10::Device& device = c10::kCPU);

// The same checks for bytes already in memory (`name` is used in messages).
Checkpoint parse_checkpoint(const std::string& bytes, const std::string& name, const c10::Device& device);

// For inspection (checkpoint info, diff): loads a file whose tensors hold NaN or
// infinity too, naming each such tensor and what it holds in `non_finite`.
Checkpoint inspect_checkpoint(const std::string& path, std::vector<std::string>* non_finite);

// The file's bytes, and a deep copy through them (nothing shared with `checkpoint`).
std::string checkpoint_bytes(const Checkpoint& checkpoint);
Checkpoint copy_checkpoint(const Checkpoint& checkpoint);

// "NaN" or "infinity" where a floating-point tensor holds one, "" where every element is finite.
std::string non_finite_value(const at::Tensor& tensor);

}  // namespace translution
