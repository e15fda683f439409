#pragma once
// MNIST test digits for the canvas, loaded off the GUI thread.
#include <memory>
#include <random>

#include <QObject>
#include <QString>

#include "data/canvas_dataset.h"

namespace translution::ui {

class TestDigitSource : public QObject {
  Q_OBJECT
 public:
  struct Sample {
    at::Tensor pixels;  // [S, S] float in [0, 1]
    int64_t index = -1;
    int64_t label = -1;
    Placement where;
  };

  explicit TestDigitSource(QString data_dir, QObject* parent = nullptr);

  // Starts loading in a worker thread; emits loaded() or failed(message).
  void load();
  bool ready() const { return digits_ != nullptr; }
  const QString& error() const { return error_; }
  const QString& dataDir() const { return data_dir_; }
  int64_t size() const { return digits_ ? digits_->size() : 0; }

  Sample sample(CanvasKind kind, int64_t index, int64_t canvas = 84) const;
  Sample random(CanvasKind kind, int64_t canvas = 84);

 Q_SIGNALS:
  void loaded();
  void failed(const QString& message);

 private:
  QString data_dir_;
  QString error_;
  std::shared_ptr<const MnistDigits> digits_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace translution::ui
