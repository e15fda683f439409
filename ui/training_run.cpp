#include "training_run.h"

#include <new>

#include "cpu/allocator.h"
#include "model_variant.h"
#include "util/device.h"
#include "util/error.h"

namespace translution::ui {
namespace {

// "lor, static, tiny/12 depth 4 (LoR 8x8, sequence)": what a legend needs to tell runs apart.
QString short_name(const ViTConfig& model, const std::string& dataset) {
  const QString variant = model_variant(model);
  return QString("%1, %2, %3/%4 depth %5%6")
      .arg(QString::fromStdString(model.model), QString::fromStdString(dataset),
           QString::fromStdString(model.preset))
      .arg(model.patch)
      .arg(model.depth)
      .arg(variant.isEmpty() ? QString() : " (" + variant + ")");
}

}  // namespace

TrainingRun::TrainingRun(const EngineOptions& engine, const ViTConfig& model, const TrainConfig& train,
                         const QString& data_dir, const QString& device, QObject* parent)
    : QObject(parent),
      trainer_(std::make_unique<Trainer>(engine, model, train, data_dir.toStdString(),
                                         parse_device(device.toStdString()))),
      label_(QString("%1 %2/%3 on %4, seed %5%6")
                 .arg(QString::fromStdString(model.model), QString::fromStdString(model.preset))
                 .arg(model.patch)
                 .arg(QString::fromStdString(train.dataset))
                 .arg(train.seed)
                 .arg(train.precision == "bf16" ? ", bf16" : "")),
      short_name_(short_name(model, train.dataset)) {
  qRegisterMetaType<translution::TrainProgress>();
}

TrainingRun::TrainingRun(const EngineOptions& engine, Checkpoint checkpoint, const QString& data_dir,
                         const QString& device, QObject* parent)
    : QObject(parent) {
  qRegisterMetaType<translution::TrainProgress>();
  const ViTConfig model = checkpoint.config;
  trainer_ = std::make_unique<Trainer>(engine, std::move(checkpoint), data_dir.toStdString(),
                                       parse_device(device.toStdString()));
  label_ = QString("%1 %2/%3 on %4%5 (resumed)")
               .arg(QString::fromStdString(model.model), QString::fromStdString(model.preset))
               .arg(model.patch)
               .arg(QString::fromStdString(trainer_->config().dataset))
               .arg(trainer_->config().precision == "bf16" ? ", bf16" : "");
  short_name_ = short_name(model, trainer_->config().dataset);
  saved_path_valid_ = true;
}

TrainingRun::~TrainingRun() {
  if (thread_) {
    trainer_->stop();
    thread_->wait();
  }
  trainer_.reset();
  release_free_memory();  // its weights and optimizer state
}

void TrainingRun::start() {
  if (running()) return;
  delete thread_;
  paused_seen_ = false;
  thread_ = QThread::create([this] {
    TrainProgress::Event end = TrainProgress::Event::Stopped;
    // An exception must not leave this thread (it would end the process, and every other run with it):
    // out of memory, or a file that cannot be written, stops this run with its reason.
    try {
      end = trainer_->run([this](const TrainProgress& p) {
        if (p.event == TrainProgress::Event::Paused) paused_seen_ = true;
        Q_EMIT progress(p);  // queued to the GUI thread
      });
    } catch (const std::bad_alloc&) {
      Q_EMIT failed(
          tr("out of memory: this run needs more than the machine has free (a smaller batch or model)"));
    } catch (const std::exception& e) {
      Q_EMIT failed(QString::fromStdString(e.what()).section('\n', 0, 0));
    }
    // The steps' activations, freed, were kept for the next step; a run that
    // ended needs only its weights and AdamW's moments (Translution ViT-A/12:
    // 465 and 930 MB of a 2.9 GB training peak).
    release_free_memory();
    Q_EMIT finished(int(end));
  });
  thread_->setObjectName("training");
  saved_path_valid_ = false;
  thread_->start();
}

void TrainingRun::save(const QString& path) {
  if (!idle()) throw Error("pause or stop the run before saving it");
  save_checkpoint(path.toStdString(), trainer_->checkpoint());
  saved_path_valid_ = true;
}

Checkpoint TrainingRun::snapshot() const {
  if (!idle()) throw Error("pause or stop the run before taking its model");
  return copy_checkpoint(trainer_->checkpoint());
}

}  // namespace translution::ui
