#pragma once
// The learned per-offset weights of a Translution-family slot: for every layer
// and each relative projection (q, k, v), the Frobenius norm of W_delta over the
// model's own (2H-1) x (2W-1) offset grid (square cells, the axes over exactly
// the offsets that exist), with the three CLS matrices in a row beneath, all on
// one labelled colour scale, repeated beside every row of maps (a sequence's thin
// strips have one). Hovering a cell names the offset and its value. Or, for the
// digit on the canvas, what each offset's value matrix carried
// (Predictor::value_contributions), recomputed off the GUI thread on every change.
// Cells clicked or dragged over are selected for a knockout (knockout_bar.h): the
// slot then predicts with a copy whose selected W_delta are replaced
// (slot_knockout.h); selected cells are hatched on the maps of the chosen projections.
#include <QList>
#include <QWidget>

#include "infer/predictor.h"
#include "nn/offset_grid.h"
#include "qcustomplot_include.h"

class QComboBox;
class QLabel;

namespace translution::ui {

class KnockoutBar;
class ModelSlot;
class SlotBox;
class SlotKnockout;

// The colour range of values that a few outliers must not wash out: from the
// `low` to the `high` quantile (0..1) of the finite values, linearly interpolated
// between order statistics; (0, 1) when there are none.
QCPRange quantile_range(std::vector<double> values, double low, double high);

class OffsetPanel : public QWidget {
  Q_OBJECT
 public:
  OffsetPanel(const QList<ModelSlot*>& slots, QWidget* parent = nullptr);
  // The slots to choose from (they change as slots are added and removed).
  void setSlots(const QList<ModelSlot*>& slots);
  QCustomPlot* plot() const { return plot_; }
  int heatMapCount() const { return maps_.size(); }
  QCPColorMap* heatMap(int index) const { return maps_.value(index); }
  QCPColorScale* colourScale() const { return scale_; }
  int colourScaleCount() const { return scale_ ? 1 + int(echoes_.size()) : 0; }
  QString message() const;  // what the panel says when there is nothing to show
  QString describeCell(int map, int row, int column) const;  // the hover text
  bool showingContributions() const;
  bool busy() const;
  KnockoutBar* knockoutBar() const { return knockout_bar_; }
  SlotKnockout* knockout() const { return knockout_; }
  ModelSlot* shownSlot() const;
  int selectionMarks() const { return int(marks_.size()); }  // hatched cells over all maps
  // The map and cell under a point of the plot: false where there is none.
  bool cellAt(const QPoint& pos, int* map, int* row, int* column) const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void sizePlot();
  int plotWidthWithoutScrollBar() const;
  int columnsFor(int width) const;
  void placeMaps();
  void placeScales();
  void rebuild();
  void draw(const std::vector<std::vector<OffsetMagnitudes>>& magnitudes, const Predictor* predictor);
  void clearPlot();
  void explain(const Predictor& predictor, bool any_maps);
  void addScale(const std::vector<double>& values);
  void blankBelowScale();
  // The weights' norms of `model` as the maps hold them: with a knocked-out copy standing in,
  // the slot's own model's set the colour scale (the replaced cells would otherwise stretch
  // it and recolour every cell the knockout left alone).
  std::vector<double> scaleNorms(const Predictor& model) const;
  void showHover(QMouseEvent* event);
  void pressCell(QMouseEvent* event);
  void releaseCell(QMouseEvent* event);
  void drawSelection();
  void markCell(int map, double x, double y);
  void applyKnockout();
  void showKnockoutState();
  QCPColorMap* addMap(QCPAxisRect* rect, const OffsetGrid& grid, const QString& title,
                      std::vector<double>& values);

  SlotBox* slot_box_;
  QComboBox* what_;  // weights or this canvas's contributions
  QLabel* message_;
  QCustomPlot* plot_;
  QCPColorScale* scale_ = nullptr;
  QList<QCPColorScale*> echoes_;  // copies of scale_ beside the rows after the first
  QList<QCPColorMap*> maps_;
  std::vector<OffsetGrid> grids_;  // one per map
  QList<int> map_layers_;
  int grid_h_ = 0, grid_w_ = 0;
  int columns_ = 1;          // maps to a row of the plot
  int natural_columns_ = 1;  // where they fit: one per projection, or layers three a row
  bool layer_rows_ = false;  // a row is a layer's projections
  int generation_ = 0;       // a newer rebuild makes a running computation's result stale
  int busy_ = 0;
  KnockoutBar* knockout_bar_;
  SlotKnockout* knockout_;
  QList<QCPAbstractItem*> marks_;                          // the selection's hatching, redrawn with the maps
  int press_map_ = -1, press_row_ = 0, press_column_ = 0;  // where a click or drag began
};

}  // namespace translution::ui
