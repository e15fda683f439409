#pragma once
// Shift metrics for the slots' models (core's train/shift_metrics.h): a table of consistency under
// 1-px and whole-patch shifts and of the worst case over a grid of positions, one row per slot,
// and a plot of the token equivariance error layer by layer, one curve per slot (CLS dashed).
// The measurement runs off the GUI thread; a newer run, or closing the panel, stops an older one.
#include <memory>

#include <QGroupBox>
#include <QList>

#include "qcustomplot_include.h"
#include "slot_work.h"
#include "train/shift_metrics.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace translution::ui {

class ModelSlot;

class ShiftMetricsPanel : public QGroupBox {
  Q_OBJECT
 public:
  ShiftMetricsPanel(QString data_dir, const QList<ModelSlot*>& slots, QWidget* parent = nullptr);

  void setSlots(const QList<ModelSlot*>& slots);
  bool busy() const { return busy_ > 0; }
  QTableWidget* table() const { return table_; }
  QCustomPlot* layerPlot() const { return plot_; }
  QString note() const;
  // Sizes of the measurement (the spin boxes), for tests and scripts.
  void setSizes(int consistency_digits, int worst_case_digits, int stride, int equivariance_digits);

 public Q_SLOTS:
  void measure();

 Q_SIGNALS:
  void measured();  // the table and plot show a finished measurement

 private:
  struct Row {
    SlotWork slot;
    ShiftMetrics metrics;
  };
  ShiftMetricsOptions options() const;
  void showProgress(int64_t done, int64_t total);
  void showRows(const QList<Row>& rows);
  void plotLayers(const QList<Row>& rows);
  void finish(const QString& error);

  QString data_dir_;
  QList<ModelSlot*> slots_;
  int busy_ = 0;
  NewestRun run_;  // a newer run makes an older one stop and its results stale
  QSpinBox *consistency_digits_, *worst_digits_, *stride_, *equivariance_digits_;
  QPushButton* measure_;
  QProgressBar* progress_;
  QTableWidget* table_;
  QCustomPlot* plot_;
  QLabel* note_;
};

}  // namespace translution::ui
