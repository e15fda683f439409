#pragma once
// The learned per-offset weights of a Translution-family slot: for every layer
// and each relative projection (q, k, v), the Frobenius norm of W_delta over the
// (2H-1) x (2W-1) offset grid, with the three CLS matrices in a row beneath, all
// on one colour scale. Hovering a cell names the offset and its value. Or, for
// the digit on the canvas, what each offset's value matrix carried
// (Predictor::value_contributions), recomputed off the GUI thread on every change.
#include <QList>
#include <QWidget>

#include "infer/predictor.h"
#include "nn/offset_grid.h"
#include "qcustomplot_include.h"

class QComboBox;
class QLabel;

namespace translution::ui {

class ModelSlot;

class OffsetPanel : public QWidget {
  Q_OBJECT
 public:
  OffsetPanel(const QList<ModelSlot*>& slots, QWidget* parent = nullptr);
  // The slots to choose from (they change as slots are added and removed).
  void setSlots(const QList<ModelSlot*>& slots);
  QCustomPlot* plot() const { return plot_; }
  int heatMapCount() const { return maps_.size(); }
  QString message() const;                       // what the panel says when there is nothing to show
  QString describeCell(int map, int row, int column) const;  // the hover text
  bool showingContributions() const;
  bool busy() const { return busy_ > 0; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuild();
  void squareUp();
  void draw(const std::vector<std::vector<OffsetMagnitudes>>& magnitudes, const Predictor* predictor);
  void showHover(QMouseEvent* event);
  QCPColorMap* addMap(QCPAxisRect* rect, const OffsetGrid& grid, const QString& title, QCPColorScale* scale,
                      double& low, double& high);

  QList<ModelSlot*> slots_;
  QComboBox* slot_box_;
  QComboBox* what_;  // weights or this canvas's contributions
  QLabel* message_;
  QCustomPlot* plot_;
  QList<QCPColorMap*> maps_;
  std::vector<OffsetGrid> grids_;  // one per map
  QList<int> map_layers_;
  int grid_h_ = 0, grid_w_ = 0;
  int generation_ = 0;  // a newer rebuild makes a running computation's result stale
  int busy_ = 0;
};

}  // namespace translution::ui
