#pragma once
// One comparison slot: a model that predicts on every canvas change without
// blocking the GUI thread. Loading and predicting run on Qt's thread pool; while
// a prediction is in flight only the newest canvas waits (older ones are
// dropped), so a fast stroke never queues up stale work.
#include <memory>
#include <optional>

#include <QObject>
#include <QString>

#include "infer/predictor.h"
#include "tensor_metatype.h"

namespace translution::ui {

class ModelSlot : public QObject {
  Q_OBJECT
 public:
  // The models this slot loads predict under `engine`.
  ModelSlot(const EngineOptions& engine, QString name, QObject* parent = nullptr);
  ~ModelSlot() override;

  // A checkpoint file, or a bundled model (":/models/NAME.ckpt"); device "cpu" or "cuda".
  void load(const QString& source, const QString& device = "cpu");
  // A model already in memory (e.g. from the training panel); `label` names it and
  // `note` says where it came from and how to keep it (the model picker's tooltip).
  // Returns why the slot refused it (canvas_mismatch), empty when it took it.
  QString setPredictor(std::shared_ptr<const Predictor> predictor, const QString& label,
                       const QString& note = {});
  // The newest canvas ([S, S] in [0, 1]); predicted as soon as the slot is free.
  void request(const at::Tensor& canvas);

  const QString& name() const { return name_; }
  // The options the models this slot loads run under (a model handed to setPredictor keeps its own).
  const EngineOptions& engine() const { return engine_; }
  QString source() const { return source_; }
  QString note() const { return note_; }  // setPredictor's note; empty for a model loaded from its source
  QString device() const { return device_; }
  std::shared_ptr<const Predictor> predictor() const { return predictor_; }
  const std::optional<Prediction>& lastPrediction() const { return last_; }
  const QString& error() const { return error_; }
  bool busy() const { return loading_ || predicting_ || (pending_.defined() && predictor_); }

 Q_SIGNALS:
  void loadStarted(const QString& source);
  void loaded();
  void failed(const QString& message);
  void predicted();  // lastPrediction() is new

 private:
  void startNext();

  EngineOptions engine_;
  QString name_, source_, note_, device_ = "cpu", error_;
  std::shared_ptr<const Predictor> predictor_;
  std::optional<Prediction> last_;
  at::Tensor pending_;
  bool loading_ = false, predicting_ = false;
  int generation_ = 0;  // a newer load() makes results of older work stale
};

// Reads a checkpoint from a file or a Qt resource and builds a Predictor that runs
// under `engine` (any thread).
std::shared_ptr<const Predictor> load_predictor(const EngineOptions& engine, const QString& source,
                                                const QString& device);
// Why a model cannot predict the studio's canvas ([size, size] pixels), or an empty
// string when it can: a model made for other images would see the digit resampled
// to a size it never met in training.
QString canvas_mismatch(const ViTConfig& config, const QString& source, int size);

// Whether a canvas holds no ink at all. A model answers even then, often
// confidently, but there is nothing to classify: the studio shows no prediction.
bool blank_canvas(const at::Tensor& canvas);

// The studio's canvas: 84 x 84, as in the papers' static and dynamic MNIST.
constexpr int kStudioCanvas = 84;

}  // namespace translution::ui
