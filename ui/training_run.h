#pragma once
// One training run in the studio: core's Trainer on its own QThread, its
// reports re-emitted as queued Qt signals so the GUI thread never waits on
// LibTorch. Pause, resume and stop go straight to the trainer (thread-safe).
#include <atomic>
#include <memory>

#include <QObject>
#include <QString>
#include <QThread>

#include "train/trainer.h"

Q_DECLARE_METATYPE(translution::TrainProgress)

namespace translution::ui {

class TrainingRun : public QObject {
  Q_OBJECT
 public:
  // Builds the trainer here (loads MNIST: may throw translution::Error); it computes under `engine`.
  TrainingRun(const EngineOptions& engine, const ViTConfig& model, const TrainConfig& train,
              const QString& data_dir, const QString& device, QObject* parent = nullptr);
  // Continues a saved run.
  TrainingRun(const EngineOptions& engine, Checkpoint checkpoint, const QString& data_dir,
              const QString& device, QObject* parent = nullptr);
  ~TrainingRun() override;  // stops the run and waits for its thread

  void start();
  void pause() { trainer_->pause(); }
  void resume() {
    paused_seen_ = false;  // before the worker can take another step
    saved_path_valid_ = false;
    trainer_->resume();
  }
  void stop() { trainer_->stop(); }
  bool running() const { return thread_ && thread_->isRunning(); }
  bool paused() const { return trainer_->paused(); }
  // Whether the latest weights are in a file (nothing would be lost by closing).
  bool saved() const { return saved_path_valid_; }
  // Only while paused or not running (the worker then touches no weights).
  bool idle() const { return !running() || paused_seen_; }
  // Writes a checkpoint atomically; throws translution::Error (call when idle()).
  void save(const QString& path);
  // A deep copy of the current model and state (call when idle()).
  Checkpoint snapshot() const;
  const Trainer& trainer() const { return *trainer_; }
  QString label() const { return label_; }
  // Method, dataset and size, for legends: "lor, static, tiny/12 depth 4".
  QString shortName() const { return short_name_; }

 Q_SIGNALS:
  void progress(const translution::TrainProgress& report);
  void finished(int event);             // TrainProgress::Event
  void failed(const QString& message);  // the run stopped on an error (then finished(Stopped))

 private:
  std::unique_ptr<Trainer> trainer_;
  QThread* thread_ = nullptr;
  QString label_, short_name_;
  bool saved_path_valid_ = false;
  std::atomic<bool> paused_seen_{false};  // the worker reported Paused and waits
};

}  // namespace translution::ui
