#pragma once
// A slot's model taken for work off the GUI thread (the slot may load another
// meanwhile: the work keeps the model it started with), how the Robustness tab
// names and colours it, and the helper that runs such work and hands the result
// back on the GUI thread.
#include <atomic>
#include <functional>
#include <memory>

#include <QColor>
#include <QFutureWatcher>
#include <QList>
#include <QString>
#include <QtConcurrent>

#include "infer/predictor.h"

namespace translution::ui {

class ModelSlot;

struct SlotWork {
  QString name;  // the slot's letter
  std::shared_ptr<const Predictor> predictor;
};

// The slots that hold a model, in order.
QList<SlotWork> loaded_slots(const QList<ModelSlot*>& slots);
// One colour per slot letter, the same in every plot of the tab.
QColor slot_colour(const QString& name);
// "A: Translution, trained on centred digits" (a bundled model's title, else the method).
QString slot_title(const SlotWork& s);
// "A: translution (S)": the slot, the method and what it was trained on, short enough for a map's title.
QString short_title(const SlotWork& s);

// A panel's long work, newest first: starting a run raises the previous run's stop flag (its worker
// checks it between batches) and makes that run's results stale (an older generation); the last run
// is stopped when the panel goes. Used on the GUI thread only; the worker holds just its flag.
class NewestRun {
 public:
  struct Ticket {
    int generation = 0;
    std::shared_ptr<std::atomic<bool>> stop;
  };
  NewestRun() = default;
  NewestRun(const NewestRun&) = delete;
  NewestRun& operator=(const NewestRun&) = delete;
  ~NewestRun() { *stop_ = true; }
  Ticket start() {
    *stop_ = true;
    stop_ = std::make_shared<std::atomic<bool>>(false);
    return {++generation_, stop_};
  }
  bool current(int generation) const { return generation == generation_; }

 private:
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  int generation_ = 0;
};

// Runs `work` on Qt's thread pool and `done(result)` on `owner`'s thread; nothing runs if `owner` is gone.
template <typename T>
void run_async(QObject* owner, std::function<T()> work, std::function<void(const T&)> done) {
  auto* watcher = new QFutureWatcher<T>(owner);
  QObject::connect(watcher, &QFutureWatcher<T>::finished, owner, [watcher, done] {
    done(watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run(std::move(work)));
}

}  // namespace translution::ui
