#pragma once
// One attention row drawn over the digit: how much the query token attends to
// each patch, as coloured cells over the (dimmed) canvas, with the query patch
// outlined and the weight on CLS written in a corner. Clicking a patch picks it
// as the query. Small enough to be used many times (small multiples). The cells'
// colours run from 0 to the row's largest patch weight (colourTop()), which an
// AttentionScale beneath the map reads out.
#include <QPointer>
#include <QWidget>

#include "qcustomplot_include.h"
#include "tensor_metatype.h"

namespace translution::ui {

class AttentionMap : public QWidget {
  Q_OBJECT
 public:
  explicit AttentionMap(QWidget* parent = nullptr);
  // canvas [S, S] in [0, 1]; weights [N] = one row of attention (CLS first, then
  // patches row by row over a grid_h x grid_w grid); query: token index (0 = CLS).
  void setData(const at::Tensor& canvas, const at::Tensor& weights, int grid_h, int grid_w, int query);
  void clearData();
  void setCaption(const QString& caption) {
    caption_ = caption;
    update();
  }
  bool hasData() const { return weights_.defined(); }
  // The patch weights as a [grid_h, grid_w] tensor (for tests and export).
  at::Tensor patchWeights() const;
  // The weight the brightest colour stands for: the row's largest patch weight (0 without data).
  double colourTop() const { return top_; }
  // The square the canvas and cells are drawn in, in this widget's coordinates.
  QRectF mapArea() const;
  // The gradient every attention map colours its cells with.
  static QCPColorGradient gradient() { return QCPColorGradient(QCPColorGradient::gpHot); }

  // What the map asks a layout for (the main map's 160 px by default; small multiples ask for less).
  void setPreferredSize(const QSize& size) {
    preferred_ = size;
    updateGeometry();
  }
  QSize sizeHint() const override { return preferred_; }
  QSize minimumSizeHint() const override { return {40, 40}; }

 Q_SIGNALS:
  void tokenClicked(int token);
  void dataChanged();  // new weights, or none

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  void describe();  // the tooltip: what the map shows and its numbers

  at::Tensor canvas_, weights_;
  int grid_h_ = 0, grid_w_ = 0, query_ = 0;
  double top_ = 0;
  QSize preferred_{160, 160};
  QString caption_;
  QCPColorGradient gradient_ = gradient();
};

// The colour scale an attention map is read on: a horizontal QCPColorScale in
// the maps' gradient from 0 to `top`, labelled, its bar kept exactly under the
// followed map's square (or across the whole strip when it follows none).
class AttentionScale : public QCustomPlot {
  Q_OBJECT
 public:
  explicit AttentionScale(const QString& label, QWidget* parent = nullptr);
  // The bar spans `map`'s square and, when `track_top`, its range follows the map's colourTop().
  void follow(AttentionMap* map, bool track_top);
  void setTop(double top);
  QCPColorScale* colourScale() const { return scale_; }

  QSize minimumSizeHint() const override { return {60, height_}; }
  QSize sizeHint() const override { return {160, height_}; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void alignBar();

  QCPColorScale* scale_;
  QPointer<AttentionMap> map_;
  int height_;
};

}  // namespace translution::ui
