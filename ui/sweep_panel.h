#pragma once
// The Sweep experiment: accuracy at every canvas position for fixed test
// digits, one heat map per slot on a shared 0-1 scale with the patch grid over
// it. A sweep is progressive: a coarse pass (few digits, far-apart positions)
// is on screen within seconds, then the maps refine in place to the chosen
// digits and stride; the last pass is exactly the one-shot sweep of those
// settings (core's progressive_sweep). The maps also show the sweeps the
// protocol experiment makes, and save as CSV.
#include <memory>

#include <QGroupBox>
#include <QList>

#include "slot_work.h"
#include "sweep_maps.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace translution::ui {

class ModelSlot;

class SweepPanel : public QGroupBox {
  Q_OBJECT
 public:
  SweepPanel(QString data_dir, const QList<ModelSlot*>& slots, QWidget* parent = nullptr);

  SweepMaps* sweepMaps() const { return maps_; }
  bool busy() const { return busy_ > 0; }
  void setSlots(const QList<ModelSlot*>& slots);
  // `result` under `title`, replacing the map of that title (the four newest are kept).
  void showSweep(const QString& title, const SweepResult& result, int patch, const QColor& colour);
  // Each map's sweep as CSV (x, y, accuracy, true-class probability): to `path` when there is one map,
  // else to `path` with the map's title before the suffix. Returns the error, shown in the panel too.
  QString saveCsv(const QString& path);
  QString note() const;
  QString progressText() const;

 public Q_SLOTS:
  void runSweep();

 Q_SIGNALS:
  void passShown(int pass, int passes);  // pass `pass` (0-based) of `passes` is on screen

 private:
  void chooseCsvFile();
  void showPass(const QList<SlotWork>& work, const SweepOptions& options, int pass, int passes,
                const std::vector<SweepResult>& results);
  void showProgress(int pass, const QList<SweepOptions>& passes, int64_t done, int64_t total);
  void finishSweep(const QString& error);

  QString data_dir_;
  QList<ModelSlot*> slots_;
  QList<TitledSweep> sweeps_;  // what the maps show, by title
  int busy_ = 0;
  NewestRun run_;  // a newer run makes an older one stop and its results stale
  QSpinBox *digits_, *stride_;
  QPushButton *sweep_, *save_;
  QProgressBar* progress_;
  SweepMaps* maps_;
  QLabel* note_;
};

}  // namespace translution::ui
