#pragma once
// Trains a ViT on one of the digit datasets: AdamW, cosine schedule with warm-up,
// cross-entropy, gradient clipping, held-out evaluation, checkpoints.
//
// run() blocks its caller (the CLI's main thread, the studio's worker thread) and
// reports through a callback on that thread. pause(), resume() and stop() may be
// called from any thread and take effect before the next step starts. A NaN or
// infinite loss (or gradient) stops the run before the bad step is applied; the
// checkpoint on disk is then the last good one. A state holding NaN or infinity
// (weights or AdamW moments) is never written as a checkpoint.
//
// Two kinds of step, the same update: on a GPU, and wherever the engine runs
// LibTorch's ops alone (EngineOptions::reference), the step is queued on the device
// and its loss, accuracy and NaN flag read once after it (train/device_step.h); on
// the CPU's kernels, and in a data-parallel run, each value is read as it comes and
// a batch may split over the cores (train/forward_backward.h). Precision
// bf16-autocast runs LibTorch's ops (the device step) under autocast to bfloat16.
//
// On CPU a run is a pure function of its configs: the batch order of each epoch
// comes from (seed, epoch), so a run resumed from a checkpoint takes exactly the
// steps the uninterrupted run would have taken.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <c10/core/Device.h>
#include <torch/optim/adamw.h>

#include "cpu/bf16_gemm.h"
#include "data/canvas_dataset.h"
#include "train/checkpoint.h"
#include "util/engine_options.h"

namespace translution {

class DataParallel;
class DeviceStep;
class GraphedTrainStep;

struct TrainProgress {
  enum class Event { Step, Evaluated, Paused, Resumed, Checkpointed, Finished, Stopped, Diverged };
  Event event = Event::Step;
  int64_t step = 0, total_steps = 0;
  double epoch = 0;
  double loss = 0, accuracy = 0;  // this step's batch
  double lr = 0;
  double images_per_second = 0, eta_seconds = 0;
  double test_loss = 0, test_accuracy = 0;  // set on Evaluated
  std::string message;                      // what happened, for Diverged/Checkpointed/...
};

using TrainCallback = std::function<void(const TrainProgress&)>;

class Trainer {
 public:
  // The run computes under `engine` (its forwards, backwards, evaluations and optimizer)
  // with its precision field set from train.precision (checked against this machine).
  // A fresh run: the model is initialised from train.seed.
  Trainer(const EngineOptions& engine, const ViTConfig& model, const TrainConfig& train, std::string data_dir,
          c10::Device device);
  // Continues the run saved in `checkpoint` (which must hold training state).
  Trainer(const EngineOptions& engine, Checkpoint checkpoint, std::string data_dir, c10::Device device);
  ~Trainer();

  // Where checkpoints go (every checkpoint_every steps, and when the run ends or stops).
  void set_checkpoint_path(std::string path) { checkpoint_path_ = std::move(path); }
  // The file a resumed run was read from: until the run saves, its last saved state is there
  // (messages name it; unset, they name only files this run wrote).
  void set_resumed_from(std::string path) { saved_path_ = std::move(path); }
  // Extra key=value pairs stored with every checkpoint.
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // How many shares each step's batch splits into, one core each
  // (train/forward_backward.h; TrainingThreads::batch_shares()). 1 (the default) runs
  // the whole batch on this thread with the engine's own splits.
  void set_batch_shares(int shares) { batch_shares_ = shares < 1 ? 1 : shares; }

  // Replays each full batch's step as one CUDA graph (train/graphed_train_step.h),
  // captured by the first step; a short last batch runs eagerly. Only on a CUDA device
  // with a build that captures (util/cuda_graph.h), outside data-parallel runs; a
  // capture that fails ends run() with an Error naming why (the weights untouched).
  void set_cuda_graphs(bool on) { cuda_graphs_ = on; }

  // Trains as one rank of a data-parallel run (dist/data_parallel.h): takes rank 0's
  // weights now, then each step runs this rank's share of the batch and averages the
  // gradients over the ranks. Only rank 0 evaluates and writes checkpoints (give the
  // others no checkpoint path). A rank that fails makes run() throw PeerFailure on
  // every other, after rank 0 has saved the last complete step.
  void set_data_parallel(std::shared_ptr<DataParallel> parallel);

  // Steps until done, stopped or diverged; returns the final event.
  TrainProgress::Event run(const TrainCallback& callback);

  void pause();
  void resume();
  void stop();
  bool paused() const { return paused_; }

  // The current state as a checkpoint (call between runs or from the callback).
  Checkpoint checkpoint() const;
  ViT model() const { return model_; }
  int64_t step() const { return step_; }
  int64_t total_steps() const { return config_.total_steps(); }
  const TrainConfig& config() const { return config_; }
  // The options the run computes under (its precision the config's).
  const EngineOptions& engine() const { return engine_; }
  const std::vector<CurvePoint>& history() const { return history_; }
  bool saved() const { return saved_step_ == step_; }  // the checkpoint file holds the current step
  // Writes the checkpoint now (e.g. after adding metadata); needs a checkpoint path.
  void write_checkpoint();

 private:
  void load_data();
  std::vector<int64_t> batch_indices(int64_t step);
  bool wait_while_paused(const TrainCallback& callback);
  TrainProgress train_step();
  bool steps_on_device() const;
  bool autocast() const { return config_.precision == "bf16-autocast"; }
  at::Tensor queue_device_step(const std::vector<int64_t>& indices, double lr);
  bool host_step(TrainProgress& p, const std::vector<int64_t>& indices, int64_t batch_images);
  TrainProgress diverged(TrainProgress p, const std::string& what, double value) const;
  bool stop_agreed();
  void add_other_shares(TrainProgress& p, double images, int64_t batch_images);
  [[noreturn]] void fail_after_peer(const std::exception& failure, const TrainCallback& callback);
  void evaluate_held_out(TrainProgress& p);
  void save(const TrainCallback& callback);

  ViTConfig model_config_;
  TrainConfig config_;
  EngineOptions engine_;  // precision: config_.precision, checked against this machine
  std::string data_dir_;
  c10::Device device_;
  ViT model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::unique_ptr<DeviceStep> device_step_;  // made by the first step that runs on the device
  std::unique_ptr<GraphedTrainStep> graphed_step_;
  bool cuda_graphs_ = false;
  std::unique_ptr<CanvasDataset> train_set_, test_set_;
  int batch_shares_ = 1;
  std::shared_ptr<DataParallel> parallel_;
  int64_t step_ = 0;
  int64_t saved_step_ = -1;
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;
  std::vector<CurvePoint> history_;
  CurvePoint window_;  // sums over the steps since the last curve point
  int64_t window_steps_ = 0;
  double seconds_per_step_ = 0;  // smoothed, excludes pauses and evaluations
  std::map<std::string, std::string> metadata_;
  std::string checkpoint_path_;
  std::string saved_path_;  // the file that holds step saved_step_ ("" where none is known)

  std::atomic<bool> paused_{false}, stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

// Steps between curve points (the checkpoint keeps every one).
constexpr int64_t kCurveStride = 10;

}  // namespace translution
