#pragma once
// One file per trained model: the weights, the model's full config, metadata
// (dataset, metrics, date) and, for runs that can continue, the training state
// (training config, step, AdamW state, RNG, the curves so far).
//
// On disk: a one-line header "translution-checkpoint <version> bytes=<n> md5=<hex>"
// followed by a LibTorch archive of n bytes. The header's size and checksum let a
// truncated or damaged file be named as such before anything parses it.
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

constexpr int64_t kCheckpointFormat = 1;

// One point of a run's curves. Test values are NaN where no evaluation happened.
struct CurvePoint {
  int64_t step = 0;
  double epoch = 0, loss = 0, accuracy = 0, lr = 0;
  double test_loss = 0, test_accuracy = 0;
};

struct TrainingState {
  TrainConfig config;
  int64_t step = 0;            // optimisation steps done
  at::Tensor optimizer;        // uint8: AdamW state as LibTorch serialises it
  at::Tensor rng;              // CPU generator state
  std::vector<CurvePoint> history;
};

struct Checkpoint {
  ViTConfig config;
  ViT model{nullptr};
  std::map<std::string, std::string> metadata;  // dataset, test_accuracy, created, ...
  std::optional<TrainingState> training;         // absent in weights-only files
};

// Writes atomically: a reader sees the old file or the complete new one.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Throws translution::Error naming the file and what is wrong: missing, not a
// checkpoint, newer format, truncated, checksum mismatch, bad config, a tensor
// missing or of the wrong shape. Tensors are mapped to `device`.
Checkpoint load_checkpoint(const std::string& path, const c10::Device& device = c10::kCPU);

// The file's bytes, and a deep copy through them (nothing shared with `checkpoint`).
std::string checkpoint_bytes(const Checkpoint& checkpoint);
Checkpoint copy_checkpoint(const Checkpoint& checkpoint);

// The same checks for bytes already in memory (`name` is used in messages).
Checkpoint parse_checkpoint(const std::string& bytes, const std::string& name, const c10::Device& device);

}  // namespace translution
