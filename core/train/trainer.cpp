#include "train/trainer.h"

#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <sstream>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/utils/clip_grad.h>

#include "cpu/bf16_gemm.h"
#include "cpu/fused_adamw.h"
#include "data/batches.h"
#include "dist/data_parallel.h"
#include "train/device_step.h"
#include "train/evaluate.h"
#include "train/forward_backward.h"
#include "train/graphed_train_step.h"
#include "train/lr_schedule.h"
#include "train/release_gradients.h"
#include "util/device.h"
#include "util/error.h"
#include "util/key_value.h"
#include "util/optimizer_state_key.h"

namespace translution {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

// The optimizer's state as plain tensors by parameter path; shared, not copied: a
// checkpoint is written (or copied) before the next step changes them.
std::map<std::string, AdamWState> optimizer_state(torch::optim::AdamW& optimizer, const ViT& model) {
  auto& state = optimizer.state();
  std::map<std::string, AdamWState> out;
  for (const auto& p : model->named_parameters()) {
    const auto it = state.find(optimizer_state_key<std::decay_t<decltype(state)>>(p.value()));
    if (it == state.end()) continue;
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    out[p.key()] = {s.step(), s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()};
  }
  return out;
}

void load_optimizer(torch::optim::AdamW& optimizer, const ViT& model,
                    const std::map<std::string, AdamWState>& saved, const c10::Device& device) {
  auto& state = optimizer.state();
  for (const auto& p : model->named_parameters()) {
    const auto it = saved.find(p.key());
    if (it == saved.end()) continue;
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(it->second.step);
    s->exp_avg(it->second.exp_avg.to(device).contiguous());
    s->exp_avg_sq(it->second.exp_avg_sq.to(device).contiguous());
    if (it->second.max_exp_avg_sq.defined())
      s->max_exp_avg_sq(it->second.max_exp_avg_sq.to(device).contiguous());
    state[optimizer_state_key<std::decay_t<decltype(state)>>(p.value())] = std::move(s);
  }
}

// The first parameter or optimizer tensor holding NaN or infinity, as "'name' holds NaN"; "" where all are
// finite.
std::string non_finite_state(const ViT& model, const std::map<std::string, AdamWState>& optimizer) {
  for (const auto& p : model->named_parameters())
    if (const std::string what = non_finite_value(p.value()); !what.empty())
      return "'" + p.key() + "' holds " + what;
  for (const auto& [key, s] : optimizer)
    for (const at::Tensor& t : {s.exp_avg, s.exp_avg_sq, s.max_exp_avg_sq})
      if (const std::string what = non_finite_value(t); !what.empty())
        return "the optimizer state of '" + key + "' holds " + what;
  return "";
}

void set_lr(torch::optim::AdamW& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

// bf16 runs on the CPU (cpu/bf16_gemm.h: AMX tiles or AVX512-BF16), tf32 on CUDA's
// tensor cores (util/device.h): elsewhere the run would silently be fp32. The
// engine's own dense products are fp32's under tf32: LibTorch's CUDA products take TF32.
DensePrecision run_precision(const TrainConfig& config, const c10::Device& device) {
  if (config.precision == "bf16" && !device.is_cpu())
    throw Error("training: precision bf16 runs on the CPU's bfloat16 units; on " + device.str() +
                " use precision fp32 or tf32");
  if (config.precision == "bf16-autocast") return DensePrecision::Fp32;  // autocast casts the products
  if (config.precision == "tf32") {
    if (!device.is_cuda())
      throw Error("training: precision tf32 runs on CUDA's tensor cores; on the CPU use fp32 or bf16");
    return DensePrecision::Fp32;
  }
  return parse_dense_precision(config.precision);  // says why where no bfloat16 kernel runs
}

}  // namespace

Trainer::Trainer(const EngineOptions& engine, const ViTConfig& model, const TrainConfig& train,
                 std::string data_dir, c10::Device device)
    : model_config_(model), config_(train), engine_(engine), data_dir_(std::move(data_dir)), device_(device) {
  model_config_.validate();
  config_.validate();
  engine_.precision = run_precision(config_, device_);
  engine_.reference = engine_.reference || autocast();
  load_data();
  model_ = seeded_vit(model_config_, uint64_t(config_.seed));
  model_->to(device_);
  optimizer_ = make_adamw(engine_, model_->parameters(),
                          torch::optim::AdamWOptions(config_.lr).weight_decay(config_.weight_decay));
}

Trainer::Trainer(const EngineOptions& engine, Checkpoint checkpoint, std::string data_dir, c10::Device device)
    : model_config_(checkpoint.config), engine_(engine), data_dir_(std::move(data_dir)), device_(device) {
  if (!checkpoint.training)
    throw Error("this checkpoint holds weights only (no training state), so its run cannot be resumed");
  TrainingState& s = *checkpoint.training;
  config_ = s.config;
  engine_.precision = run_precision(config_, device_);
  engine_.reference = engine_.reference || autocast();
  load_data();
  model_ = checkpoint.model;
  model_->to(device_);
  optimizer_ = make_adamw(engine_, model_->parameters(),
                          torch::optim::AdamWOptions(config_.lr).weight_decay(config_.weight_decay));
  load_optimizer(*optimizer_, model_, s.optimizer, device_);
  if (s.rng.defined() && s.rng.numel() > 0) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    try {
      generator.set_state(s.rng);
    } catch (const c10::Error& e) {
      const std::string why = e.what_without_backtrace();
      throw Error(
          "the checkpoint's random-number state is not one this LibTorch's generator takes (a damaged "
          "file, or one from another LibTorch): " +
          why.substr(0, why.find('\n')));
    }
  }
  step_ = saved_step_ = s.step;
  history_ = s.history;
  for (const auto& [k, v] : checkpoint.metadata) metadata_[k] = v;
}

Trainer::~Trainer() = default;

void Trainer::load_data() {
  train_set_ = std::make_unique<CanvasDataset>(dataset_for_model(model_config_, config_.dataset, Split::Train,
                                                                 data_dir_, uint64_t(config_.data_seed)));
  test_set_ = std::make_unique<CanvasDataset>(
      dataset_for_model(model_config_, config_.dataset, Split::Test, data_dir_, uint64_t(config_.data_seed)));
}

std::vector<int64_t> Trainer::batch_indices(int64_t step) {
  const int64_t per_epoch = config_.steps_per_epoch(), epoch = step / per_epoch;
  if (epoch != order_epoch_) {
    order_ = epoch_order(training_digits(config_), uint64_t(config_.seed), epoch);
    order_epoch_ = epoch;
    const uint64_t seed = training_placement_seed(config_, epoch);
    if (train_set_->spec().seed != seed) {  // same digits, new positions
      CanvasSpec spec = train_set_->spec();
      spec.seed = seed;
      train_set_ = std::make_unique<CanvasDataset>(train_set_->digits(), Split::Train, spec);
    }
  }
  const int64_t begin = (step % per_epoch) * config_.batch;
  const int64_t end = std::min<int64_t>(begin + config_.batch, int64_t(order_.size()));
  return {order_.begin() + begin, order_.begin() + end};
}

void Trainer::pause() {
  paused_ = true;
  wake_.notify_all();
}

void Trainer::resume() {
  paused_ = false;
  wake_.notify_all();
}

void Trainer::stop() {
  stop_ = true;
  wake_.notify_all();
}

bool Trainer::wait_while_paused(const TrainCallback& callback) {
  if (!paused_ || stop_) return !stop_;
  TrainProgress p;
  p.event = TrainProgress::Event::Paused;
  p.step = step_;
  p.total_steps = total_steps();
  callback(p);
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [this] { return !paused_ || stop_; });
  lock.unlock();
  if (!stop_) {
    p.event = TrainProgress::Event::Resumed;
    callback(p);
  }
  return !stop_;
}

TrainProgress Trainer::train_step() {
  TrainProgress p;
  p.step = step_;
  p.total_steps = total_steps();
  p.epoch = double(step_) / double(config_.steps_per_epoch());
  p.lr = scheduled_lr(step_, total_steps(), config_.warmup_steps, config_.lr, config_.min_lr);
  std::vector<int64_t> indices = batch_indices(step_);
  const int64_t batch_images = int64_t(indices.size());
  if (parallel_) indices = parallel_->share(indices);
  model_->train();
  const ScopedTf32 tf32(config_.precision == "tf32");
  if (steps_on_device()) {
    const at::Tensor report = queue_device_step(indices, p.lr);  // makes the step on first use
    const StepReport r = device_step_->finish(report);
    p.loss = r.loss;
    p.accuracy = r.accuracy;
    if (!r.applied)
      return diverged(p, std::isfinite(r.loss) ? "the gradient norm" : "the loss",
                      std::isfinite(r.loss) ? r.grad_norm : r.loss);
  } else if (!host_step(p, indices, batch_images)) {
    return p;
  }
  ++step_;
  p.step = step_;
  p.epoch = double(step_) / double(config_.steps_per_epoch());
  return p;
}

// One step queued on the device, replayed from its graph where there is one for its shape.
at::Tensor Trainer::queue_device_step(const std::vector<int64_t>& indices, double lr) {
  if (!device_step_)
    device_step_ = std::make_unique<DeviceStep>(engine_, model_, *optimizer_, config_.clip_norm, autocast());
  const Batch batch = make_batch(*train_set_, indices, device_);
  const bool graphed = cuda_graphs_ && int64_t(indices.size()) == config_.batch;
  if (graphed && !graphed_step_)
    graphed_step_ = std::make_unique<GraphedTrainStep>(*device_step_, batch.images, batch.labels);
  device_step_->set_lr(lr);  // after a capture, which leaves the update off
  if (graphed) return graphed_step_->run(batch.images, batch.labels);
  return device_step_->run(batch.images, batch.labels);
}

// LibTorch's ops on any device, or a GPU: the step whose shape a GPU wants (train/device_step.h),
// its batch whole. The CPU kernels' step splits its batch over the cores, and data-parallel ranks
// meet between backward and the update: those keep the host step.
bool Trainer::steps_on_device() const { return !parallel_ && (engine_.reference || !device_.is_cpu()); }

TrainProgress Trainer::diverged(TrainProgress p, const std::string& what, double value) const {
  p.event = TrainProgress::Event::Diverged;
  p.message = what + " became " + format_double(value) + " at step " + std::to_string(step_ + 1);
  return p;
}

// Forward, backward and the update, each value read on the host as it comes. False (with p
// set to Diverged) where the loss or the gradients' norm is not finite: no update is made.
bool Trainer::host_step(TrainProgress& p, const std::vector<int64_t>& indices, int64_t batch_images) {
  set_lr(*optimizer_, p.lr);
  release_gradients(*optimizer_);
  // A share whose loss is not finite skips its backward (train/forward_backward.h); then no step is taken.
  if (!indices.empty()) {  // a rank's share of a short last batch can be empty
    const Batch batch = make_batch(*train_set_, indices, device_);
    const ForwardBackward pass = forward_backward(engine_, model_, batch.images, batch.labels, batch_shares_);
    p.loss = pass.loss;
    p.accuracy = pass.logits.argmax(1).eq(batch.labels).to(at::kDouble).mean().item<double>();
  }
  if (parallel_) add_other_shares(p, double(indices.size()), batch_images);
  if (!std::isfinite(p.loss)) {
    p = diverged(p, "the loss", p.loss);
    return false;
  }
  const double norm = config_.clip_norm > 0
                          ? torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.clip_norm)
                          : 0.0;
  if (!std::isfinite(norm)) {
    p = diverged(p, "the gradient norm", norm);
    return false;
  }
  optimizer_->step();
  return true;
}

// The batch's loss and accuracy from every rank's share, and every rank's gradients
// summed, each weighted by its share of the batch: the whole batch's mean-loss gradient.
// A loss that is not finite anywhere is so everywhere, and no rank then steps.
void Trainer::add_other_shares(TrainProgress& p, double images, int64_t batch_images) {
  const DataParallel::StepTotals all = parallel_->sum({p.loss * images, p.accuracy * images, images});
  p.loss = all.loss_sum / all.images;
  p.accuracy = all.correct / all.images;
  if (std::isfinite(p.loss))
    parallel_->average_gradients(model_->parameters(), images / double(batch_images));
}

bool Trainer::stop_agreed() { return parallel_ ? parallel_->any(stop_) : bool(stop_); }

void Trainer::set_data_parallel(std::shared_ptr<DataParallel> parallel) {
  if (parallel && autocast())
    throw Error("precision bf16-autocast trains in one process (its step is queued whole on the device)");
  parallel_ = std::move(parallel);
  if (!parallel_) return;
  std::vector<at::Tensor> state = model_->parameters();
  for (const at::Tensor& b : model_->buffers()) state.push_back(b);
  parallel_->start_from_rank0(state);
}

// A peer failed in a collective: this rank's weights and optimizer still hold the last
// complete step (the optimizer runs only after every collective of a step), so rank 0
// saves them before the error goes up, naming the file.
void Trainer::fail_after_peer(const std::exception& failure, const TrainCallback& callback) {
  std::string message = failure.what();
  if (!checkpoint_path_.empty() && saved_step_ != step_) save(callback);
  if (!saved_path_.empty())
    message += "; " + saved_path_ + " holds step " + std::to_string(saved_step_) + ", the last complete step";
  const auto* peer = dynamic_cast<const PeerFailure*>(&failure);
  throw PeerFailure(message, peer ? peer->ranks() : std::vector<int>{});
}

// In a data-parallel run every rank evaluates its share of the held-out digits and the
// ranks sum the results: no rank waits out another's evaluation against the collectives' timeout.
void Trainer::evaluate_held_out(TrainProgress& p) {
  const int64_t batch = std::max<int64_t>(config_.batch, 64),
                total = evaluation_size(*test_set_, config_.eval_samples);
  const auto [first, last] = parallel_ ? batch_share(total, parallel_->rank(), parallel_->world_size())
                                       : std::pair<int64_t, int64_t>{0, total};
  const EvalResult r = evaluate_range(engine_, model_, *test_set_, first, last, batch, device_);
  p.event = TrainProgress::Event::Evaluated;
  p.test_loss = r.loss;
  p.test_accuracy = r.accuracy;
  if (parallel_) {
    const double n = double(r.count);
    const DataParallel::StepTotals all = parallel_->sum({r.loss * n, r.accuracy * n, n});
    p.test_loss = all.loss_sum / all.images;
    p.test_accuracy = all.correct / all.images;
  }
  metadata_["test_accuracy_subset"] = format_double(p.test_accuracy);
}

namespace {

// LibTorch's allocators report running out as a c10::Error ("you tried to allocate N bytes"
// on the CPU, "out of memory" on CUDA), the standard library as std::bad_alloc.
bool out_of_memory(const c10::Error& e) {
  const std::string what = e.what_without_backtrace();
  return what.find("you tried to allocate") != std::string::npos ||
         what.find("out of memory") != std::string::npos ||
         what.find("not enough memory") != std::string::npos;
}

}  // namespace

// Saving holds a copy of the file's bytes beside the run (train/memory_guard.h counts it). Where
// that does not fit, the file keeps what it held (it is written atomically) and the run ends
// with one line saying so, instead of an abort that loses it.
void Trainer::write_checkpoint() {
  if (checkpoint_path_.empty()) throw Error("no checkpoint path was set for this run");
  const auto no_memory = [this] {
    return Error("out of memory while saving step " + std::to_string(step_) + " to " + checkpoint_path_ +
                 " (writing it holds a copy of the weights and AdamW's state beside the run): " +
                 checkpoint_path_ + " was not written over" +
                 (saved_path_.empty() ? ""
                                      : "; " + saved_path_ + " holds step " + std::to_string(saved_step_) +
                                            ", the last saved"));
  };
  try {
    const Checkpoint c = checkpoint();
    if (const std::string bad = non_finite_state(c.model, c.training->optimizer); !bad.empty())
      throw Error("the run's state at step " + std::to_string(step_) + " is not finite (" + bad + "); " +
                  checkpoint_path_ + " was not written over");
    save_checkpoint(checkpoint_path_, c);
    saved_path_ = checkpoint_path_;
  } catch (const std::bad_alloc&) {
    throw no_memory();
  } catch (const c10::Error& e) {
    if (!out_of_memory(e)) throw;
    throw no_memory();
  }
  saved_step_ = step_;
}

void Trainer::save(const TrainCallback& callback) {
  if (checkpoint_path_.empty() || saved_step_ == step_) return;
  write_checkpoint();
  TrainProgress p;
  p.event = TrainProgress::Event::Checkpointed;
  p.step = step_;
  p.total_steps = total_steps();
  p.message = "saved " + checkpoint_path_ + " at step " + std::to_string(step_);
  callback(p);
}

TrainProgress::Event Trainer::run(const TrainCallback& callback) {
  stop_ = false;
  while (step_ < total_steps()) {
    TrainProgress p;
    std::chrono::steady_clock::time_point start;
    try {
      if (stop_agreed() || (!parallel_ && !wait_while_paused(callback))) break;  // no pause across ranks
      start = std::chrono::steady_clock::now();
      p = train_step();
    } catch (const PeerFailure& e) {
      fail_after_peer(e, callback);
    }
    if (p.event == TrainProgress::Event::Diverged) {
      // The bad step was not applied: the weights and optimizer in memory are the state before it, good only
      // where every value is finite. A good state is saved, so that the message names a file that holds it.
      const std::string bad = non_finite_state(model_, optimizer_state(*optimizer_, model_));
      if (!checkpoint_path_.empty() && saved_step_ != step_ && bad.empty()) save(callback);
      if (!bad.empty())
        p.message += "; training stopped; the state in memory is not finite (" + bad +
                     "), so it was not saved" +
                     (saved_path_.empty() ? std::string()
                                          : "; " + saved_path_ + " holds step " +
                                                std::to_string(saved_step_) + ", the last state saved");
      else
        p.message +=
            saved_path_.empty()
                ? "; training stopped before applying it, and no checkpoint was written (no output file)"
                : "; training stopped before applying it; " + saved_path_ + " holds step " +
                      std::to_string(saved_step_) + ", the last good state";
      callback(p);
      return p.event;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds_per_step_ = seconds_per_step_ == 0 ? seconds : 0.9 * seconds_per_step_ + 0.1 * seconds;
    p.images_per_second = double(config_.batch) / seconds_per_step_;
    p.eta_seconds = double(total_steps() - step_) * seconds_per_step_;
    window_.loss += p.loss;
    window_.accuracy += p.accuracy;
    window_.lr += p.lr;
    ++window_steps_;
    const bool evaluate_now = step_ % config_.eval_interval() == 0 || step_ == total_steps();
    if (step_ % kCurveStride == 0 || evaluate_now) {
      CurvePoint point{step_,
                       p.epoch,
                       window_.loss / double(window_steps_),
                       window_.accuracy / double(window_steps_),
                       window_.lr / double(window_steps_),
                       kNaN,
                       kNaN};
      window_ = {};
      window_steps_ = 0;
      history_.push_back(point);
    }
    callback(p);
    if (evaluate_now) {
      try {
        evaluate_held_out(p);
      } catch (const PeerFailure& e) {
        fail_after_peer(e, callback);
      }
      history_.back().test_loss = p.test_loss;
      history_.back().test_accuracy = p.test_accuracy;
      callback(p);
    }
    if (config_.checkpoint_every > 0 && step_ % config_.checkpoint_every == 0) save(callback);
  }
  save(callback);
  TrainProgress done;
  done.step = step_;
  done.total_steps = total_steps();
  done.event = step_ >= total_steps() ? TrainProgress::Event::Finished : TrainProgress::Event::Stopped;
  done.message =
      done.event == TrainProgress::Event::Finished ? "finished" : "stopped at step " + std::to_string(step_);
  callback(done);
  return done.event;
}

Checkpoint Trainer::checkpoint() const {
  Checkpoint c;
  c.config = model_config_;
  c.model = model_;
  c.metadata = metadata_;
  c.metadata["dataset"] = config_.dataset;
  c.metadata["steps"] = std::to_string(step_);
  c.metadata["created"] = utc_now();
  TrainingState s;
  s.config = config_;
  s.step = step_;
  s.optimizer = optimizer_state(*optimizer_, model_);
  s.rng = at::detail::getDefaultCPUGenerator().get_state();
  s.history = history_;
  c.training = std::move(s);
  return c;
}

}  // namespace translution
