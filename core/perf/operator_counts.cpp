#include "perf/operator_counts.h"

#include <set>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/loss.h>

#include "cpu/offset_buckets.h"
#include "nn/vit.h"
#include "train/device_step.h"

namespace translution {
namespace {

// Leaf operators that launch no computation: views, reshapes, bare allocations, and
// conversions that found nothing to convert.
bool computes(const std::string& name) {
  static const std::set<std::string> no_work = {"aten::view",
                                                "aten::_reshape_alias",
                                                "aten::reshape",
                                                "aten::as_strided",
                                                "aten::slice",
                                                "aten::select",
                                                "aten::narrow",
                                                "aten::transpose",
                                                "aten::t",
                                                "aten::permute",
                                                "aten::expand",
                                                "aten::expand_as",
                                                "aten::unsqueeze",
                                                "aten::squeeze",
                                                "aten::alias",
                                                "aten::detach",
                                                "aten::detach_",
                                                "aten::_unsafe_view",
                                                "aten::unfold",
                                                "aten::split",
                                                "aten::split_with_sizes",
                                                "aten::chunk",
                                                "aten::unbind",
                                                "aten::view_as",
                                                "aten::flatten",
                                                "aten::unflatten",
                                                "aten::contiguous",
                                                "aten::empty",
                                                "aten::empty_like",
                                                "aten::empty_strided",
                                                "aten::resize_",
                                                "aten::lift_fresh",
                                                "aten::movedim",
                                                "aten::diagonal",
                                                "aten::to",
                                                "aten::set_",
                                                "aten::result_type",
                                                "aten::is_nonzero",
                                                "aten::numpy_T",
                                                "aten::matrix_H",
                                                "aten::resolve_conj",
                                                "aten::resolve_neg",
                                                "aten::conj",
                                                "aten::_conj",
                                                "aten::_neg_view",
                                                "detach"};
  // The autograd engine's own records (a backward node evaluated) hold operators, or none.
  return no_work.count(name) == 0 && name.rfind("autograd::", 0) != 0;
}

enum class Phase { Forward, Backward, Optimizer };

// Multi-tensor operators: one or a few kernels each on a GPU; on the CPU they loop
// over their tensors in operators of their own, which are not counted.
bool multi_tensor(const std::string& name) { return name.rfind("aten::_foreach_", 0) == 0; }

// The observer's state on the counting thread, a frame per operator begun. An
// operator is counted when it computes and none of the operators it called did
// (or called one that did): the leaves of the work, whatever views and no-ops sit
// between. A multi-tensor operator is counted as it starts, and nothing inside it.
struct Frame {
  bool computing_child = false;
  bool multi_tensor = false;
};
struct Observer {
  OperatorCounts* counts = nullptr;
  Phase phase = Phase::Forward;
  std::vector<Frame> frames;
  int inside_multi_tensor = 0;
};
thread_local Observer observer;

void count(const std::string& name) {
  OperatorCounts& c = *observer.counts;
  (observer.phase == Phase::Forward    ? c.forward
   : observer.phase == Phase::Backward ? c.backward
                                       : c.optimizer)++;
  ++c.by_operator[name];
  if (name == "aten::_local_scalar_dense") ++c.host_syncs;
  static const std::set<std::string> data_dependent = {
      "aten::nonzero",    "aten::masked_select",     "aten::unique", "aten::_unique", "aten::_unique2",
      "aten::unique_dim", "aten::unique_consecutive"};
  if (data_dependent.count(name)) ++c.data_dependent;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  observer.counts->seen.insert(fn.name());
  const bool opens = observer.inside_multi_tensor == 0 && multi_tensor(fn.name());
  if (opens) count(fn.name());
  if (opens || observer.inside_multi_tensor > 0) ++observer.inside_multi_tensor;
  observer.frames.push_back(Frame{false, opens});
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (observer.frames.empty()) return;  // began before the count did
  const Frame frame = observer.frames.back();
  observer.frames.pop_back();
  bool computed = frame.computing_child || frame.multi_tensor;
  if (observer.inside_multi_tensor > 0) {
    --observer.inside_multi_tensor;
  } else if (!frame.computing_child && computes(fn.name())) {
    count(fn.name());
    computed = true;
  }
  if (computed && !observer.frames.empty()) observer.frames.back().computing_child = true;
}

// Counts the operators this thread runs while it lives.
class CountingScope {
 public:
  explicit CountingScope(OperatorCounts& counts) {
    observer = Observer{&counts, Phase::Forward, {}};
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_start, &on_end).scopes({at::RecordScope::FUNCTION}));
  }
  ~CountingScope() {
    at::removeCallback(handle_);
    observer = Observer{};
  }
  CountingScope(const CountingScope&) = delete;
  CountingScope& operator=(const CountingScope&) = delete;
  void phase(Phase p) { observer.phase = p; }

 private:
  at::CallbackHandle handle_;
};

OperatorCounts count_step(const EngineOptions& engine, const ViTConfig& config, int64_t batch) {
  at::manual_seed(0);
  ViT model(config);
  model->train();
  torch::optim::AdamW adamw(model->parameters(), torch::optim::AdamWOptions(3e-4).weight_decay(0.05));
  DeviceStep step(engine, model, adamw, 1.0);
  const at::Tensor images = at::randn({batch, config.channels, config.image_height, config.image_width});
  const at::Tensor labels = at::randint(config.classes, {batch}, at::kLong);
  step.set_lr(3e-4);
  step.finish(step.run(images, labels));  // plans and caches made
  step.set_lr(3e-4);
  OperatorCounts counts;
  const int64_t plans_before = offset_bucket_plans_made();
  {
    CountingScope scope(counts);
    step.run(images, labels, [&](StepPart part) {
      scope.phase(part == StepPart::Forward    ? Phase::Forward
                  : part == StepPart::Backward ? Phase::Backward
                                               : Phase::Optimizer);
    });
  }
  counts.index_plans_made = offset_bucket_plans_made() - plans_before;
  return counts;
}

OperatorCounts count_forward(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                             bool with_attention) {
  at::manual_seed(0);
  ViT model(config);
  model->eval();
  at::NoGradGuard no_grad;
  const at::Tensor images = at::randn({batch, config.channels, config.image_height, config.image_width});
  const auto forward = [&] {
    ViTInspection inspection;
    model->forward(engine, images, with_attention ? &inspection : nullptr);
  };
  forward();  // plans and caches made
  OperatorCounts counts;
  const int64_t plans_before = offset_bucket_plans_made();
  {
    const CountingScope scope(counts);
    forward();
  }
  counts.index_plans_made = offset_bucket_plans_made() - plans_before;
  return counts;
}

}  // namespace

OperatorCounts operator-(const OperatorCounts& a, const OperatorCounts& b) {
  OperatorCounts d;
  d.forward = a.forward - b.forward;
  d.backward = a.backward - b.backward;
  d.optimizer = a.optimizer - b.optimizer;
  d.host_syncs = a.host_syncs - b.host_syncs;
  d.data_dependent = a.data_dependent - b.data_dependent;
  d.index_plans_made = a.index_plans_made - b.index_plans_made;
  d.by_operator = a.by_operator;
  d.seen = a.seen;
  for (const auto& [name, n] : b.by_operator)
    if ((d.by_operator[name] -= n) == 0) d.by_operator.erase(name);
  return d;
}

TrainingOperatorCounts count_training_operators(const EngineOptions& engine_in, const ViTConfig& config,
                                                int64_t batch) {
  const EngineOptions engine = with(engine_in, &EngineOptions::reference, true);
  ViTConfig deeper = config;
  deeper.depth += 1;
  TrainingOperatorCounts counts;
  counts.step = count_step(engine, config, batch);
  counts.block = count_step(engine, deeper, batch) - counts.step;
  return counts;
}

OperatorCounts count_inference_operators(const EngineOptions& engine, const ViTConfig& config, int64_t batch,
                                         bool with_attention) {
  return count_forward(with(engine, &EngineOptions::reference, true), config, batch, with_attention);
}

}  // namespace translution
