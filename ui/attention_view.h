#pragma once
// Where one slot's model looks: for the chosen layer and head (or the rollout
// through every layer), the query's attention over the digit, the full N x N
// matrix (query row marked), small multiples of every layer and head for the same
// query, and each head's mean attention distance per layer (how local it is).
#include <QList>
#include <QWidget>

#include "qcustomplot_include.h"

class QComboBox;
class QGridLayout;
class QLabel;

namespace translution::ui {

class AttentionMap;
class ModelSlot;

// The query, independent of any model's grid: CLS, or a point on the canvas.
struct AttentionQuery {
  bool cls = true;
  double x = 0, y = 0;  // canvas pixels (84 x 84 canvas)
};

class AttentionView : public QWidget {
  Q_OBJECT
 public:
  AttentionView(ModelSlot* slot, QWidget* parent = nullptr);
  void setQuery(const AttentionQuery& query);
  ModelSlot* slot() const { return slot_; }
  AttentionMap* mainMap() const { return main_; }
  const QList<AttentionMap*>& smallMultiples() const { return multiples_; }
  QCustomPlot* matrixPlot() const { return matrix_plot_; }
  QCustomPlot* distancePlot() const { return distance_plot_; }
  // Shows the rollout through every layer instead of one layer's attention.
  void setRollout(bool rollout);
  bool rollout() const;
  int queryToken() const;  // in this slot's model, -1 without a model

 Q_SIGNALS:
  void queryPicked(const translution::ui::AttentionQuery& query);

 private:
  void rebuild();    // model changed: combos and small multiples
  void refresh();    // prediction, layer, head or query changed
  void pickToken(int token);
  void showDistances(const std::vector<at::Tensor>& attention, int grid_h, int grid_w);
  void showMatrix(const at::Tensor& matrix, int query);

  ModelSlot* slot_;
  AttentionQuery query_;
  QLabel* title_;
  QComboBox* layer_;
  QComboBox* head_;
  AttentionMap* main_;
  QCustomPlot* matrix_plot_;
  QCPColorMap* matrix_;
  QCPItemRect* row_marker_;
  QCustomPlot* distance_plot_;
  QGridLayout* grid_;
  QList<AttentionMap*> multiples_;
};

}  // namespace translution::ui
