#include "test_digit_source.h"

#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include "util/error.h"

namespace translution::ui {

TestDigitSource::TestDigitSource(QString data_dir, QObject* parent)
    : QObject(parent), data_dir_(std::move(data_dir)) {}

void TestDigitSource::load() {
  QPointer<TestDigitSource> self(this);
  const std::string dir = data_dir_.toStdString();
  (void)QtConcurrent::run([self, dir] {
    std::shared_ptr<const MnistDigits> digits;
    QString error;
    try {
      digits = std::make_shared<const MnistDigits>(load_mnist(dir, Split::Test));
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    // Hand the result to the GUI thread; `self` may be gone by then.
    QMetaObject::invokeMethod(
        qApp,
        [self, digits, error] {
          if (!self) return;
          if (digits) {
            self->digits_ = digits;
            Q_EMIT self->loaded();
          } else {
            self->error_ = error;
            Q_EMIT self->failed(error);
          }
        },
        Qt::QueuedConnection);
  });
}

TestDigitSource::Sample TestDigitSource::sample(CanvasKind kind, int64_t index, int64_t canvas) const {
  if (!digits_) throw Error("MNIST test digits are not loaded");
  CanvasDataset dataset(*digits_, Split::Test, {kind, canvas, 0, false});
  Sample s;
  s.pixels = dataset.canvas(index);
  s.index = index;
  s.label = dataset.label(index);
  s.where = dataset.placement(index);
  return s;
}

TestDigitSource::Sample TestDigitSource::random(CanvasKind kind, int64_t canvas) {
  std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(0, size() - 1));
  return sample(kind, pick(rng_), canvas);
}

}  // namespace translution::ui
