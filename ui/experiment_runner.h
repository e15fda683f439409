#pragma once
// The papers' translation experiment at a budget the user sets: for each chosen
// method, train one model on centred (static) digits and one on digits anywhere
// (dynamic), evaluate Static->Static, Dynamic->Dynamic and Static->Dynamic, and
// sweep the static model across the canvas. Runs on its own threads, the two
// models of a method side by side (one core each: the studio runs each model's
// products on one thread); every result is reported as a queued signal the moment
// it exists.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <QObject>
#include <QStringList>
#include <QThread>

#include "train/checkpoint.h"
#include "train/translation_sweep.h"
#include "util/engine_options.h"

Q_DECLARE_METATYPE(translution::SweepResult)

namespace translution {
class Trainer;
}

namespace translution::ui {

struct ExperimentBudget {
  int64_t train_digits = 12000;  // the first N training digits
  int64_t epochs = 2;
  int64_t depth = 2;            // blocks of the tiny preset (dim 64, 1 head)
  std::string layout = "grid";  // ViTConfig::layout of every model
  int64_t test_digits = 1000;   // per test set
  int64_t sweep_digits = 50;
  int64_t sweep_stride = 4;
  int64_t seed = 1;
};

class ExperimentRunner : public QObject {
  Q_OBJECT
 public:
  // Its models train, evaluate and sweep under `engine`.
  ExperimentRunner(const EngineOptions& engine, QString data_dir, QObject* parent = nullptr);
  ~ExperimentRunner() override;  // stops the run and waits for its thread

  // Trains and evaluates `methods` (model names: translution, lor, attention, ...).
  void start(const QStringList& methods, const ExperimentBudget& budget);
  void stop();
  bool running() const { return thread_ && thread_->isRunning(); }
  // A model the run trained, by method and dataset ("static" or "dynamic"); empty before.
  std::shared_ptr<const Checkpoint> model(const QString& method, const QString& dataset) const;

 Q_SIGNALS:
  void progress(double fraction, const QString& what);             // of the whole run, with what it does now
  void accuracy(const QString& method, int column, double value);  // ProtocolTable::Column
  void trained(const QString& method, const QString& dataset);
  void swept(const QString& method, const translution::SweepResult& result);
  void finished(const QString& error);  // empty when every model finished

 private:
  void runMethod(const QString& method, int index);
  // Trains one model; `done` is its share of the pair's steps so far, for the progress bar.
  Checkpoint train(const QString& method, const QString& dataset, int index, std::atomic<double>* done,
                   const std::atomic<double>* other);
  // Each method: two trainings (side by side) and a sweep, counted as three equal parts of the bar.
  double fraction(int part, double within) const { return (part + within) / (3.0 * methods_.size()); }

  EngineOptions engine_;
  QString data_dir_;
  ExperimentBudget budget_;
  QStringList methods_;
  QThread* thread_ = nullptr;
  std::atomic<bool> stop_{false};
  std::mutex trainers_mutex_;
  std::vector<Trainer*> trainers_;                               // the ones training now, to stop them
  std::map<QString, std::shared_ptr<const Checkpoint>> models_;  // "method/dataset", written on the worker
  mutable std::mutex models_mutex_;
};

// The model a budget trains for `method`: the tiny preset at the budget's depth on the 84x84 canvas,
// patch 12.
ViTConfig experiment_model(const QString& method, const ExperimentBudget& budget);

}  // namespace translution::ui
