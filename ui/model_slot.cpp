#include "model_slot.h"

#include <ATen/ATen.h>
#include <QFile>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QtConcurrent>

#include "train/memory_guard.h"
#include "util/device.h"
#include "util/error.h"

namespace translution::ui {
namespace {

struct Outcome {
  std::shared_ptr<const Predictor> predictor;
  std::optional<Prediction> prediction;
  QString error;
};

}  // namespace

std::shared_ptr<const Predictor> load_predictor(const EngineOptions& engine, const QString& source,
                                                const QString& device) {
  const c10::Device where = parse_device(device.toStdString());
  // A file is checked before it is read (a bundled model, a Qt resource, is known to fit).
  if (!source.startsWith(':'))
    if (const std::optional<CheckpointPeek> peek = peek_checkpoint(source.toStdString())) {
      MemoryPlan plan = checkpoint_plan(*peek, 1);
      plan.engine = engine;
      require_memory(plan, where);
    }
  // A user's file goes through core's bounded reader (a regular file, every read checked); a
  // bundled model is a Qt resource, read from memory with the same checks.
  Checkpoint c;
  if (source.startsWith(':')) {
    QFile file(source);
    if (!file.open(QIODevice::ReadOnly))
      throw Error("cannot open checkpoint " + source.toStdString() + ": " + file.errorString().toStdString());
    const QByteArray bytes = file.readAll();
    c = parse_checkpoint(std::string(bytes.constData(), size_t(bytes.size())), source.toStdString(), where);
  } else {
    c = load_checkpoint(source.toStdString(), where);
  }
  if (const QString why = canvas_mismatch(c.config, source, kStudioCanvas); !why.isEmpty())
    throw Error(why.toStdString());
  return std::make_shared<const Predictor>(engine, std::move(c), source.toStdString(), where);
}

QString canvas_mismatch(const ViTConfig& config, const QString& source, int size) {
  if (config.image_height == size && config.image_width == size) return {};
  return QObject::tr(
             "%1: the model reads %2x%3 images; the studio's canvas is %4x%4 (train it on static, "
             "dynamic or moving digits to compare it here)")
      .arg(source)
      .arg(config.image_height)
      .arg(config.image_width)
      .arg(size);
}

bool blank_canvas(const at::Tensor& canvas) { return canvas.defined() && !canvas.gt(0).any().item<bool>(); }

ModelSlot::ModelSlot(const EngineOptions& engine, QString name, QObject* parent)
    : QObject(parent), engine_(engine), name_(std::move(name)) {}

ModelSlot::~ModelSlot() = default;

void ModelSlot::load(const QString& source, const QString& device) {
  const int generation = ++generation_;
  loading_ = true;
  Q_EMIT loadStarted(source);
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation, source, device] {
    const Outcome out = watcher->result();
    watcher->deleteLater();
    if (generation != generation_) return;  // a newer load() superseded this one
    loading_ = false;
    if (!out.predictor) {
      error_ = out.error;
      Q_EMIT failed(out.error);  // the previous model, if any, stays in the slot
      return;
    }
    error_.clear();
    predictor_ = out.predictor;
    source_ = source;
    note_.clear();
    device_ = device;
    last_.reset();
    Q_EMIT loaded();
    startNext();
  });
  watcher->setFuture(QtConcurrent::run([engine = engine_, source, device] {
    Outcome out;
    try {
      out.predictor = load_predictor(engine, source, device);
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  }));
}

QString ModelSlot::setPredictor(std::shared_ptr<const Predictor> predictor, const QString& label,
                                const QString& note) {
  if (QString why = canvas_mismatch(predictor->config(), label, kStudioCanvas); !why.isEmpty()) return why;
  ++generation_;  // results of older work are stale now
  loading_ = false;
  error_.clear();
  predictor_ = std::move(predictor);
  source_ = label;
  note_ = note;
  device_ = predictor_->device().is_cuda() ? "cuda" : "cpu";
  last_.reset();
  Q_EMIT loaded();
  startNext();
  return {};
}

void ModelSlot::request(const at::Tensor& canvas) {
  pending_ = canvas.detach().clone();
  startNext();
}

void ModelSlot::startNext() {
  if (predicting_ || loading_ || !predictor_ || !pending_.defined()) return;
  predicting_ = true;
  const at::Tensor canvas = pending_;
  pending_ = at::Tensor();
  const std::shared_ptr<const Predictor> predictor = predictor_;
  const int generation = generation_;
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation] {
    const Outcome out = watcher->result();
    watcher->deleteLater();
    predicting_ = false;
    if (generation == generation_) {
      if (out.prediction) {
        last_ = out.prediction;
        Q_EMIT predicted();
      } else {
        error_ = out.error;
        Q_EMIT failed(out.error);
      }
    }
    startNext();
  });
  watcher->setFuture(QtConcurrent::run([predictor, canvas] {
    Outcome out;
    try {
      out.prediction = predictor->predict(canvas, true);
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  }));
}

}  // namespace translution::ui
