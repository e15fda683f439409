#pragma once
// A checkpoint's configs without loading it: the memory guard (train/memory_guard.h)
// estimates what loading and running a model will take before its weights are read.
// Only the file's safetensors header is read (its length first, bounded), so a
// checkpoint of any size answers at once.
#include <cstdint>
#include <optional>
#include <string>

#include "nn/vit_config.h"
#include "train/train_config.h"

namespace translution {

struct CheckpointPeek {
  ViTConfig config;
  std::optional<TrainConfig> training;  // a run that can be resumed
  int64_t file_bytes = 0;
};

// nullopt where the configs cannot be read this way (a missing or damaged file,
// not a checkpoint, format 1): load_checkpoint then names the problem.
std::optional<CheckpointPeek> peek_checkpoint(const std::string& path);

}  // namespace translution
