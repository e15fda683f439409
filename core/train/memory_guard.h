#pragma once
// Refusing a run that will not fit, before it allocates anything: the memory
// estimate (nn/memory_estimate.h) against what the device has free
// (util/available_memory.h). A run that does not fit gets one message naming
// what it needs, what there is, and what would fit instead: the largest batch,
// --recompute, LoR-Translution. Without this the kernel's OOM killer, or an
// allocation deep inside LibTorch, ends the run (or the studio) halfway.
#include <string>

#include <c10/core/Device.h>

#include "nn/memory_estimate.h"
#include "train/checkpoint_peek.h"
#include "util/available_memory.h"
#include "util/engine_options.h"

namespace translution {

// The MNIST digits a training run holds (both splits: uint8 images, int64 labels).
constexpr double kMnistBytes = 70000.0 * (28 * 28 + 8);

struct MemoryPlan {
  ViTConfig config;
  // How the run computes (its last block, its reassociation change what a forward holds):
  // the options the run's owner hands its model.
  EngineOptions engine;
  bool training = false;
  // Only opening a checkpoint to read or rewrite it (checkpoint info, strip, export):
  // refusals say so rather than name a batch the command never runs.
  bool opening = false;
  int64_t batch = 1;
  bool recompute = false;
  bool bf16_autocast = false;  // training under autocast to bfloat16 (nn/memory_estimate.h)
  // Training: the held-out evaluation the run does between steps, a forward
  // without gradients of this many images next to the weights, gradients and
  // AdamW state (Trainer: max(batch, 64)); 0: none.
  int64_t eval_batch = 0;
  double extra_bytes = 0;  // held besides: the digits, models already loaded
  std::string extra_what;  // what extra_bytes are, for messages ("the digits")
  // Reading a checkpoint first: what loading holds beside the model's weights
  // (the file's bytes and their copies), freed before the model runs.
  double loading_bytes = 0;
  // Training: the run writes checkpoints (train --out; rank 0 of a data-parallel run). On the
  // CPU the writer's bytes come on top of the run's peak (memory_guard.cpp says why).
  bool saves_checkpoint = false;
  // Processes on this machine that each hold the plan (`train --nproc`: N ranks, N copies of
  // the run; only the first writes checkpoints), and the option that sets them, for refusals.
  int ranks = 1;
  std::string ranks_option;  // "--nproc"
  // How the front end names what a refusal suggests ("" where it offers no such choice).
  std::string batch_option;      // "--batch", "--digits", "batch"
  std::string recompute_option;  // "--recompute"
  std::string model_option;      // "--model", "method"
  std::string override_hint;     // "--force runs it anyway"
};

struct MemoryCheck {
  MemoryEstimate estimate;  // the plan's peak, by part, for one rank
  double saving = 0;  // what writing a checkpoint holds beside that peak (0: none, or not on this device)
  double needed = 0;  // what the run takes beyond this process as it is (on CPU less the process
                      // baseline), every rank and the checkpoint's writing included
  AvailableMemory available;  // bytes < 0: unknown, and the run fits
  bool fits = true;
  std::string summary;  // "needs ~2.9 GB of 21.3 GB available"
  std::string refusal;  // where it does not fit: one line, what would fit included
};

MemoryCheck check_memory(const MemoryPlan& plan, const c10::Device& device);

// The bytes the checkpoint writer holds at once while saving a training run of `config`
// (the whole file: weights and AdamW's two moments), on the device that counts them.
double checkpoint_saving_bytes(const ViTConfig& config, MemoryDevice device);

// Loading a checkpoint (its configs read by train/checkpoint_peek.h) and running
// its model on `batch` images without gradients.
MemoryPlan checkpoint_plan(const CheckpointPeek& peek, int64_t batch);
// Throws translution::Error with the refusal when the plan does not fit.
void require_memory(const MemoryPlan& plan, const c10::Device& device);

MemoryDevice memory_device(const c10::Device& device);
// "2.9 GB", "347 MB": bytes the way a reader compares them (decimal units).
std::string format_bytes(double bytes);

}  // namespace translution
