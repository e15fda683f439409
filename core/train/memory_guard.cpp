#include "train/memory_guard.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "util/error.h"

namespace translution {
namespace {

// Loading a checkpoint holds several copies of the file at once beside the model
// it builds: the bytes read, their string, the archive part, its stream and the
// archive's tensors. The factor is the larger of those read from `translution
// predict` of a weights-only and a resumable checkpoint (docs/performance.md,
// "Memory and `--recompute`").
constexpr double kLoadingCopies = 5.4;

// The checkpoint writer (train/checkpoint.cpp) builds the whole safetensors file in memory
// before it writes it: one more copy of the weights and AdamW's two moments. On the CPU that
// copy comes on top of the training step's peak, not out of it: the blocks the step freed stay
// with the process (cpu/allocator.h) and the file's bytes are not taken from them, so the
// resident set grows by the file's size while it is written (docs/performance.md, "Memory
// and `--recompute`"). On CUDA the copy is host memory, which the device's check does not count.
constexpr double kSavingCopies = 1.0;

double saving_bytes(const MemoryPlan& p, MemoryDevice device) {
  return p.training && p.saves_checkpoint ? checkpoint_saving_bytes(p.config, device) : 0.0;
}

// The plan's peak. A training run also evaluates held-out digits between steps:
// a forward without gradients next to the weights, every gradient (left from
// the step) and AdamW's moments, which on a GPU can exceed the step itself.
MemoryEstimate plan_estimate(const MemoryPlan& p, MemoryDevice device) {
  if (p.opening) {  // the model is built and filled but never run
    MemoryEstimate opened = estimate_inference(p.engine, p.config, 1, device);
    opened.activations = 0;
    return opened;
  }
  if (!p.training) return estimate_inference(p.engine, p.config, p.batch, device);
  MemoryTarget target = memory_target(device);
  target.bf16_autocast = p.bf16_autocast;
  MemoryEstimate step = estimate_training(p.engine, p.config, p.batch, p.recompute, target);
  if (p.eval_batch <= 0) return step;
  MemoryEstimate evaluation = step;
  evaluation.gradients = step.weights;
  evaluation.activations = estimate_inference(p.engine, p.config, p.eval_batch, device).activations;
  return evaluation.total() > step.total() ? evaluation : step;
}

// What the run takes beyond this process as it stands: on the CPU the process
// baseline is already resident (the check runs inside it); a GPU's is not. Reading
// a checkpoint comes first, into this process's memory whichever device the model
// goes to, and may take more than running it.
double rank_bytes(const MemoryEstimate& e, const MemoryPlan& p, MemoryDevice device, bool saves) {
  const bool cpu = device == MemoryDevice::Cpu;
  const double run = e.total() - (cpu ? e.baseline : 0.0) + (saves ? saving_bytes(p, device) : 0.0);
  return std::max(run, cpu ? e.weights + p.loading_bytes : 0.0) + p.extra_bytes;
}

// Every rank of the plan: the first is this process and writes the checkpoints; each other
// one is a process of its own, with its own baseline on the CPU.
double needed_bytes(const MemoryEstimate& e, const MemoryPlan& p, MemoryDevice device) {
  const double others = double(std::max(p.ranks, 1) - 1);
  const double baseline = device == MemoryDevice::Cpu ? e.baseline : 0.0;
  return rank_bytes(e, p, device, true) + others * (rank_bytes(e, p, device, false) + baseline);
}

// What must fit what is available: every rank together, or, where the limit binds each
// process alone (ulimit -v), the largest rank, rank 0.
double binding_bytes(const MemoryEstimate& e, const MemoryPlan& p, MemoryDevice device,
                     const AvailableMemory& available) {
  return available.per_process ? rank_bytes(e, p, device, true) : needed_bytes(e, p, device);
}

bool plan_fits(const MemoryPlan& p, MemoryDevice device, const AvailableMemory& available) {
  return binding_bytes(plan_estimate(p, device), p, device, available) <= available.bytes;
}

// The largest batch below the plan's that fits, or 0 (the estimate grows with the batch).
int64_t largest_batch(MemoryPlan p, MemoryDevice device, const AvailableMemory& available) {
  int64_t low = 0, high = p.batch;  // low fits (0: nothing yet), high does not
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    p.batch = mid;
    (plan_fits(p, device, available) ? low : high) = mid;
  }
  return low;
}

// The plan with LoR-Translution in place of Translution (translution-qk becomes
// lor-qk, and so on), or false where no block is Translution.
bool with_lor(MemoryPlan& p) {
  bool changed = false;
  for (std::string* name : {&p.config.model, &p.config.first_model}) {
    if (name->rfind("translution", 0) != 0) continue;
    *name = "lor" + name->substr(11);
    changed = true;
  }
  if (!changed) return false;
  p.config.position_embedding = attention_choice(p.config.model).absolute_embedding;
  return true;
}

// "--recompute fits", "--model lor with --batch 40 fits", or "" where nothing does.
std::string fitting(const std::string& change, const MemoryPlan& p, MemoryDevice device,
                    const AvailableMemory& available) {
  if (plan_fits(p, device, available)) return change + " fits";
  const int64_t batch = largest_batch(p, device, available);
  if (batch == 0 || p.batch_option.empty()) return "";
  return (change.empty() ? "" : change + " with ") + p.batch_option + " " + std::to_string(batch) + " fits";
}

// "--nproc 2 fits": the most ranks below the plan's that fit, or "".
std::string fewer_ranks(MemoryPlan p, MemoryDevice device, const AvailableMemory& available) {
  if (p.ranks_option.empty()) return "";
  for (--p.ranks; p.ranks >= 1; --p.ranks)
    if (plan_fits(p, device, available)) return p.ranks_option + " " + std::to_string(p.ranks) + " fits";
  return "";
}

// The alternatives that fit, separated by commas, in the order a user would try them.
std::string what_fits(const MemoryPlan& p, MemoryDevice device, const AvailableMemory& available) {
  std::vector<std::string> options;
  if (const std::string s = fewer_ranks(p, device, available); !s.empty()) options.push_back(s);
  const int64_t batch = largest_batch(p, device, available);
  if (batch > 0 && !p.batch_option.empty())
    options.push_back(p.batch_option + " " + std::to_string(batch) + " fits");
  if (p.training && !p.recompute && !p.recompute_option.empty() &&
      p.config.attention_spec(p.config.depth - 1).relative()) {
    MemoryPlan recompute = p;
    recompute.recompute = true;
    if (const std::string s = fitting(p.recompute_option, recompute, device, available); !s.empty())
      options.push_back(s);
  }
  if (MemoryPlan lor = p; !p.model_option.empty() && with_lor(lor))
    if (const std::string s = fitting(p.model_option + " " + lor.config.model, lor, device, available);
        !s.empty())
      options.push_back(s);
  std::string text;
  for (const std::string& o : options) text += (text.empty() ? "" : ", ") + o;
  if (!text.empty()) return text;
  if (batch > 0)  // no option sets the batch here
    return "batches of up to " + std::to_string(batch) + " images would fit";
  MemoryPlan one = p;
  one.batch = 1;
  const MemoryEstimate e = plan_estimate(one, device);
  if (device == MemoryDevice::Cpu && e.weights + p.loading_bytes >= e.total() - e.baseline)
    return "reading the checkpoint alone needs ~" + format_bytes(e.weights + p.loading_bytes + p.extra_bytes);
  return "even one image needs ~" + format_bytes(needed_bytes(e, one, device)) + ": a smaller model or image";
}

std::string describe(const MemoryPlan& p, const c10::Device& device) {
  const ViTConfig& c = p.config;
  const std::string verb = p.training ? "training " : p.opening ? "opening " : "running ";
  return verb + c.model + " ViT-" + c.preset + "/" + std::to_string(c.patch) + " (" +
         std::to_string(c.image_height) + "x" + std::to_string(c.image_width) + ")" +
         (p.opening ? "" : " at batch " + std::to_string(p.batch)) +
         (p.recompute ? " with --recompute" : "") + " on " + device.str() +
         (p.ranks > 1
              ? " in " + std::to_string(p.ranks) + " ranks" +
                    (p.ranks_option.empty() ? ""
                                            : " (" + p.ranks_option + " " + std::to_string(p.ranks) + ")")
              : "");
}

std::string parts(const MemoryEstimate& e, const MemoryPlan& p, double saving) {
  std::string text = p.ranks > 1 ? "each rank: weights " : "weights ";
  text += format_bytes(e.weights);
  if (e.gradients > 0) text += ", gradients " + format_bytes(e.gradients);
  if (e.optimizer > 0) text += ", AdamW " + format_bytes(e.optimizer);
  if (!p.opening) text += ", activations " + format_bytes(e.activations);
  if (p.loading_bytes > 0)
    text += "; reading the checkpoint " + format_bytes(p.loading_bytes) + " beside the weights";
  if (p.extra_bytes > 0)
    text += "; " + (p.extra_what.empty() ? "besides" : p.extra_what) + " " + format_bytes(p.extra_bytes);
  if (saving > 0)
    text += std::string(p.ranks > 1 ? "; rank 0 " : "; ") + "writing a checkpoint " + format_bytes(saving) +
            " beside the run";
  return text;
}

}  // namespace

MemoryDevice memory_device(const c10::Device& device) {
  return device.is_cuda() ? MemoryDevice::Cuda : MemoryDevice::Cpu;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1e12)
    std::snprintf(text, sizeof text, "%.3g TB", bytes / 1e12);
  else if (bytes >= 1e9)
    std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  else
    std::snprintf(text, sizeof text, "%.0f MB", bytes / 1e6);
  return text;
}

MemoryCheck check_memory(const MemoryPlan& p, const c10::Device& device) {
  const MemoryDevice where = memory_device(device);
  MemoryCheck check;
  check.estimate = plan_estimate(p, where);
  check.saving = saving_bytes(p, where);
  check.needed = needed_bytes(check.estimate, p, where);
  check.available = available_memory(device, !p.opening);  // opening multiplies nothing
  check.summary = "needs ~" + format_bytes(check.needed);
  if (check.available.bytes < 0) return check;
  check.summary += " of " + format_bytes(check.available.bytes) + " available";
  const double binding = binding_bytes(check.estimate, p, where, check.available);
  check.fits = binding <= check.available.bytes;
  if (check.fits) return check;
  const std::string need = binding == check.needed ? format_bytes(check.needed)
                                                   : format_bytes(binding) + " in rank 0 (" +
                                                         format_bytes(check.needed) + " in all)";
  check.refusal = describe(p, device) + " needs ~" + need + " (" + parts(check.estimate, p, check.saving) +
                  ") but " + format_bytes(check.available.bytes) + " is available (" +
                  check.available.source + ")" +
                  (p.opening ? "" : ": " + what_fits(p, where, check.available)) +
                  (p.override_hint.empty() ? "" : "; " + p.override_hint);
  return check;
}

double checkpoint_saving_bytes(const ViTConfig& config, MemoryDevice device) {
  if (device != MemoryDevice::Cpu) return 0;
  // The weights and AdamW's moments are the same under any options.
  const MemoryEstimate state = estimate_training(EngineOptions{}, config, 1, false, device);
  return kSavingCopies * (state.weights + state.optimizer);
}

MemoryPlan checkpoint_plan(const CheckpointPeek& peek, int64_t batch) {
  MemoryPlan plan;
  plan.config = peek.config;
  plan.batch = batch;
  plan.loading_bytes = kLoadingCopies * double(peek.file_bytes);
  plan.bf16_autocast = peek.training && peek.training->precision == "bf16-autocast";  // a resumed run's own
  return plan;
}

void require_memory(const MemoryPlan& plan, const c10::Device& device) {
  const MemoryCheck check = check_memory(plan, device);
  if (!check.fits) throw Error(check.refusal);
}

}  // namespace translution
