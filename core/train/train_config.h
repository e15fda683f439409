#pragma once
// How a model is trained: data, optimisation and bookkeeping. Stored in every
// checkpoint (key=value text) so a run can be resumed or reproduced exactly.
#include <cstdint>
#include <string>

namespace translution {

// The most optimisation steps a run may have, asked for as steps or as epochs.
constexpr int64_t kMaxTrainSteps = 1'000'000'000;

struct TrainConfig {
  std::string dataset = "dynamic";  // mnist | static | dynamic | moving
  int64_t data_seed = 0;            // placement of digits on the canvas
  bool fresh_positions = false;     // draw new dynamic/moving positions every epoch (augmentation)
  int64_t train_samples = 0;        // 0: the whole training split; else its first N digits
  int64_t epochs = 1;               // used when steps == 0
  int64_t steps = 0;                // total optimisation steps; 0: epochs x steps per epoch
  int64_t batch = 64;
  double lr = 3e-4;  // AdamW peak learning rate (the public code's default)
  double weight_decay = 0.05;
  int64_t warmup_steps = 0;  // linear warm-up, then cosine decay to min_lr
  double min_lr = 0;
  double clip_norm = 1.0;        // global gradient-norm clip; 0 disables
  int64_t seed = 0;              // initialisation and batch order
  int64_t eval_every = 0;        // steps between held-out evaluations; 0: once per epoch
  int64_t eval_samples = 2000;   // test digits used by those evaluations (0: all)
  int64_t checkpoint_every = 0;  // steps between checkpoint writes; 0: only at the end
  // The products' precision: fp32 | bf16 (the CPU kernels' bfloat16 products, cpu/bf16_gemm.h)
  // | bf16-autocast (LibTorch's ops under autocast to bfloat16, CPU or CUDA: train/device_step.h)
  // | tf32 (CUDA).
  std::string precision = "fp32";

  int64_t steps_per_epoch() const;  // ceil(train digits / batch)
  int64_t total_steps() const;
  int64_t eval_interval() const;
  std::string to_text() const;
  static TrainConfig from_text(const std::string& text);  // throws translution::Error
  void validate() const;
};

// Digits in the training split (60000) limited by train_samples.
int64_t training_digits(const TrainConfig& config);

// The placement seed of the training canvases in `epoch`: data_seed, or with
// fresh_positions a seed of its own per epoch (the test set always uses data_seed).
uint64_t training_placement_seed(const TrainConfig& config, int64_t epoch);

}  // namespace translution
