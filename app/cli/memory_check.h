#pragma once
// The CLI's side of the memory guard (train/memory_guard.h): every command that
// allocates a model checks first that it will fit, unless --force.
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "train/memory_guard.h"

namespace translution::cli {

// What each command's --help says about --force (docs/architecture.md, "Memory before allocating").
constexpr const char* kForceHelp = "skips the memory check (a run estimated not to fit is otherwise refused)";

// Refuses `plan` (translution::Error: one line) unless `force`.
void check_plan(bool force, MemoryPlan plan, const c10::Device& device);

// `train --nproc N`, before any rank starts: the N ranks of this machine each hold their own
// run (rank 0 also writes the checkpoints). On CUDA the ranks take the visible GPUs in turn
// unless `device_option` names one (cuda:K), so those that share the device are counted.
// Refused in one line naming --nproc (and how many ranks would fit), unless `force`.
void check_local_ranks(bool force, MemoryPlan plan, const std::string& device_option, int nproc);

// Loading each checkpoint and running it under `engine` on `batch` images, the models
// held together (eval keeps every one it loads); a file whose configs cannot be read
// without loading it is left to the loader's own errors.
void check_checkpoints(const EngineOptions& engine, bool force, const std::vector<std::string>& paths,
                       int64_t batch, const std::string& batch_option, const c10::Device& device);

// The same for commands that only open checkpoints (checkpoint info, strip, diff, export),
// on the CPU at batch 1: they have no --force to offer.
void check_checkpoints_to_open(const std::vector<std::string>& paths);

}  // namespace translution::cli
