#pragma once
// One attention row drawn over the digit: how much the query token attends to
// each patch, as coloured cells over the (dimmed) canvas, with the query patch
// outlined and the weight on CLS written in a corner. Clicking a patch picks it
// as the query. Small enough to be used many times (small multiples).
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
  void setCaption(const QString& caption) { caption_ = caption; update(); }
  bool hasData() const { return weights_.defined(); }
  // The patch weights as a [grid_h, grid_w] tensor (for tests and export).
  at::Tensor patchWeights() const;

  QSize sizeHint() const override { return {160, 160}; }
  QSize minimumSizeHint() const override { return {48, 48}; }

 Q_SIGNALS:
  void tokenClicked(int token);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QRectF area() const;

  at::Tensor canvas_, weights_;
  int grid_h_ = 0, grid_w_ = 0, query_ = 0;
  QString caption_;
  QCPColorGradient gradient_{QCPColorGradient::gpHot};
};

}  // namespace translution::ui
