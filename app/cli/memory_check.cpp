#include "cli/memory_check.h"

#include <algorithm>
#include <optional>

#include <torch/cuda.h>

#include "util/device.h"

namespace translution::cli {

void check_plan(bool force, MemoryPlan plan, const c10::Device& device) {
  if (force) return;
  plan.override_hint = "--force runs it anyway";
  require_memory(plan, device);
}

void check_local_ranks(bool force, MemoryPlan plan, const std::string& device_option, int nproc) {
  const c10::Device device = parse_device(device_option);
  plan.ranks = nproc;
  plan.ranks_option = "--nproc";
  if (device.is_cuda() && device_option.find(':') == std::string::npos) {  // train's join_group spreads them
    const int gpus = std::max(1, int(torch::cuda::device_count()));
    plan.ranks = (nproc + gpus - 1) / gpus;
    if (gpus > 1) plan.ranks_option.clear();  // fewer ranks a GPU is not what --nproc says
  }
  check_plan(force, plan, device);
}

namespace {

// Each checkpoint beside the weights of those before it; `override_hint` ends a refusal.
void check_each(const EngineOptions& engine, const std::vector<std::string>& paths, int64_t batch,
                const std::string& batch_option, const c10::Device& device, const std::string& override_hint,
                bool opening) {
  double loaded = 0;  // the weights of the checkpoints before this one
  for (const std::string& path : paths) {
    const std::optional<CheckpointPeek> peek = peek_checkpoint(path);
    if (!peek) continue;
    MemoryPlan plan = checkpoint_plan(*peek, batch);
    plan.engine = engine;
    plan.extra_bytes = loaded;
    plan.extra_what = "the checkpoints before it";
    plan.batch_option = batch_option;
    plan.override_hint = override_hint;
    plan.opening = opening;
    require_memory(plan, device);
    loaded += estimate_inference(engine, plan.config, 1, memory_device(device)).weights;
  }
}

}  // namespace

void check_checkpoints(const EngineOptions& engine, bool force, const std::vector<std::string>& paths,
                       int64_t batch, const std::string& batch_option, const c10::Device& device) {
  if (!force) check_each(engine, paths, batch, batch_option, device, "--force runs it anyway", false);
}

void check_checkpoints_to_open(const std::vector<std::string>& paths) {
  check_each(EngineOptions{}, paths, 1, "", c10::Device(c10::kCPU), "", true);
}

}  // namespace translution::cli
