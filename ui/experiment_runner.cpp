#include "experiment_runner.h"

#include <algorithm>
#include <exception>
#include <thread>

#include <QMetaType>

#include "cpu/allocator.h"
#include "protocol_table.h"
#include "train/evaluate.h"
#include "train/memory_guard.h"
#include "train/trainer.h"
#include "util/error.h"

namespace translution::ui {
namespace {
constexpr int64_t kExperimentBatch = 64;  // images per training step of every model
}  // namespace

ViTConfig experiment_model(const QString& method, const ExperimentBudget& budget) {
  ViTConfig c = preset_config("tiny", method.toStdString());
  c.image_height = c.image_width = 84;
  c.patch = 12;
  c.depth = budget.depth;
  c.layout = budget.layout;
  c.validate();
  return c;
}

ExperimentRunner::ExperimentRunner(const EngineOptions& engine, QString data_dir, QObject* parent)
    : QObject(parent), engine_(engine), data_dir_(std::move(data_dir)) {
  qRegisterMetaType<translution::SweepResult>();
}

ExperimentRunner::~ExperimentRunner() {
  stop();
  if (thread_) thread_->wait();
}

namespace {
// Both models of a method train at once, each with its own copy of the digits:
// a method fits when twice what one of its runs takes is available.
void require_experiment_memory(const EngineOptions& engine, const QStringList& methods,
                               const ExperimentBudget& budget) {
  for (const QString& m : methods) {
    MemoryPlan plan;
    plan.config = experiment_model(m, budget);
    plan.engine = engine;
    plan.training = true;
    plan.batch = plan.eval_batch = kExperimentBatch;
    plan.extra_bytes = kMnistBytes;
    plan.extra_bytes += check_memory(plan, c10::kCPU).needed;  // the other dataset's model beside it
    plan.extra_what = "the digits and the model trained beside it";
    require_memory(plan, c10::kCPU);
  }
}
}  // namespace

void ExperimentRunner::start(const QStringList& methods, const ExperimentBudget& budget) {
  if (running()) return;
  for (const QString& m : methods)
    experiment_model(m, budget);                        // an impossible config throws here, not later
  require_experiment_memory(engine_, methods, budget);  // so does one that would not fit
  delete thread_;
  methods_ = methods;
  budget_ = budget;
  stop_ = false;
  {
    std::lock_guard<std::mutex> lock(models_mutex_);
    models_.clear();
  }
  thread_ = QThread::create([this] {
    QString error;
    try {
      for (int i = 0; i < methods_.size() && !stop_; ++i) runMethod(methods_[i], i);
      if (stop_) error = tr("stopped");
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    release_free_memory();
    Q_EMIT finished(error);
  });
  thread_->setObjectName("experiment");
  thread_->start();
}

void ExperimentRunner::stop() {
  stop_ = true;
  std::lock_guard<std::mutex> lock(trainers_mutex_);
  for (Trainer* t : trainers_) t->stop();
}

std::shared_ptr<const Checkpoint> ExperimentRunner::model(const QString& method,
                                                          const QString& dataset) const {
  std::lock_guard<std::mutex> lock(models_mutex_);
  const auto it = models_.find(method + "/" + dataset);
  return it == models_.end() ? nullptr : it->second;
}

// Both models of one method, then the three protocol cells and the static model's sweep.
void ExperimentRunner::runMethod(const QString& method, int index) {
  const std::string dir = data_dir_.toStdString();
  const QString datasets[2] = {"static", "dynamic"};
  Checkpoint pair[2];
  std::exception_ptr failure[2];
  std::atomic<double> done[2] = {0.0, 0.0};
  auto train_one = [&](int which) {
    try {
      pair[which] = train(method, datasets[which], index, &done[which], &done[1 - which]);
    } catch (...) {
      failure[which] = std::current_exception();
      stop();  // the other model of the pair need not finish: the run ends with this error
    }
  };
  std::thread dynamic(train_one, 1);
  train_one(0);
  dynamic.join();
  for (const std::exception_ptr& f : failure)
    if (f) std::rethrow_exception(f);
  if (stop_) return;
  for (int which : {0, 1}) {
    {
      std::lock_guard<std::mutex> lock(models_mutex_);
      models_[method + "/" + datasets[which]] =
          std::make_shared<const Checkpoint>(copy_checkpoint(pair[which]));
    }
    Q_EMIT trained(method, datasets[which]);
    CanvasDataset test =
        dataset_for_model(pair[which].config, datasets[which].toStdString(), Split::Test, dir);
    const double same =
        evaluate(engine_, pair[which].model, test, budget_.test_digits, 256, c10::kCPU).accuracy;
    Q_EMIT accuracy(method, which == 0 ? ProtocolTable::kStaticToStatic : ProtocolTable::kDynamicToDynamic,
                    same);
  }
  CanvasDataset moved = dataset_for_model(pair[0].config, "dynamic", Split::Test, dir);
  Q_EMIT accuracy(method, ProtocolTable::kStaticToDynamic,
                  evaluate(engine_, pair[0].model, moved, budget_.test_digits, 256, c10::kCPU).accuracy);
  if (stop_) return;
  Q_EMIT progress(fraction(3 * index + 2, 0), tr("Sweeping %1 (trained on centred digits)").arg(method));
  const MnistDigits digits = load_mnist(dir, Split::Test);
  SweepOptions sweep;
  sweep.digits = budget_.sweep_digits;
  sweep.stride = budget_.sweep_stride;
  const auto stopped = [this](int64_t, int64_t) {
    if (stop_) throw Error("stopped");  // stop() ends a sweep between positions too
  };
  Q_EMIT swept(method, translation_sweep(engine_, pair[0].model, digits, sweep, c10::kCPU, stopped));
}

Checkpoint ExperimentRunner::train(const QString& method, const QString& dataset, int index,
                                   std::atomic<double>* done, const std::atomic<double>* other) {
  TrainConfig t;
  t.dataset = dataset.toStdString();
  t.train_samples = budget_.train_digits;
  t.epochs = budget_.epochs;
  t.batch = kExperimentBatch;
  t.lr = 1e-3;
  t.warmup_steps = std::min<int64_t>(100, t.total_steps() / 10);
  t.seed = budget_.seed;
  t.eval_samples = 500;
  t.validate();
  Trainer trainer(engine_, experiment_model(method, budget_), t, data_dir_.toStdString(), c10::kCPU);
  {
    std::lock_guard<std::mutex> lock(trainers_mutex_);
    trainers_.push_back(&trainer);
    if (stop_) trainer.stop();
  }
  // However run() ends (an exception included), the trainer leaves the list before it is destroyed.
  struct Unlist {
    ExperimentRunner* runner;
    Trainer* trainer;
    ~Unlist() {
      std::lock_guard<std::mutex> lock(runner->trainers_mutex_);
      runner->trainers_.erase(std::find(runner->trainers_.begin(), runner->trainers_.end(), trainer));
    }
  } unlist{this, &trainer};
  const QString what = tr("Training %1 on centred and on moved digits").arg(method);
  const auto end = trainer.run([&](const TrainProgress& p) {
    if (p.event != TrainProgress::Event::Step || p.step % 5 != 0) return;
    *done = double(p.step) / p.total_steps;
    if (dataset == "static")  // one report for the pair
      Q_EMIT progress(fraction(3 * index, *done + *other),
                      tr("%1: step %2 of %3").arg(what).arg(p.step).arg(p.total_steps));
  });
  if (end == TrainProgress::Event::Diverged)
    throw Error(method.toStdString() + " on " + dataset.toStdString() + " diverged (its loss became NaN)");
  Checkpoint c = trainer.checkpoint();
  c.metadata["dataset"] = dataset.toStdString();
  return c;
}

}  // namespace translution::ui
