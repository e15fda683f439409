#pragma once
// Where one slot's model looks: for the chosen layer and head (or the rollout
// through every layer), the query's attention over the digit, the full N x N
// matrix (query row marked, square cells), each head's mean attention distance
// per layer (how local it is), and small multiples of every layer and head for
// the same query. Every map has a labelled colour scale.
#include <QList>
#include <QWidget>

#include "qcustomplot_include.h"

class QComboBox;
class QGridLayout;
class QLabel;

namespace translution::ui {

class AttentionMap;
class AttentionScale;
class ElidedLabel;
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
  AttentionScale* mainScale() const { return main_scale_; }
  const QList<AttentionMap*>& smallMultiples() const { return multiples_; }
  AttentionScale* multiplesScale() const { return multiples_scale_; }
  QCustomPlot* matrixPlot() const { return matrix_plot_; }
  QCPColorScale* matrixScale() const { return matrix_scale_; }
  QCustomPlot* distancePlot() const { return distance_plot_; }
  // Shows the rollout through every layer instead of one layer's attention.
  void setRollout(bool rollout);
  bool rollout() const;
  int queryToken() const;  // in this slot's model, -1 without a model
  // The matrix's hover text for a query and a key token (empty outside the matrix).
  QString describeMatrixCell(int query, int key) const;

 Q_SIGNALS:
  void queryPicked(const translution::ui::AttentionQuery& query);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QLayout* buildHeader();
  void buildMatrix();
  void buildDistances();
  QWidget* buildMultiples();
  void rebuild();  // model changed: combos and small multiples
  void refresh();  // prediction, layer, head or query changed
  void pickToken(int token);
  void showDistances(const std::vector<at::Tensor>& attention, int grid_h, int grid_w);
  void showMatrix(const at::Tensor& matrix, int query);
  void layOutMatrix();  // square cells, the scale under them
  void hoverMatrix(QMouseEvent* event);
  QString tokenName(int token) const;

  ModelSlot* slot_;
  AttentionQuery query_;
  ElidedLabel* title_;
  QComboBox* layer_;
  QComboBox* head_;
  AttentionMap* main_;
  AttentionScale* main_scale_;
  QCustomPlot* matrix_plot_;
  QCPColorMap* matrix_ = nullptr;
  QCPColorScale* matrix_scale_ = nullptr;
  QCPItemRect* row_marker_ = nullptr;
  at::Tensor matrix_values_;  // the matrix shown, for the hover text
  QCustomPlot* distance_plot_;
  QGridLayout* grid_;
  AttentionScale* multiples_scale_ = nullptr;
  QLabel* multiples_caption_ = nullptr;  // "every layer (and head)", as the model has
  QWidget* content_ = nullptr;           // the maps and plots, hidden while the slot is empty
  QLabel* empty_ = nullptr;              // what to do about an empty slot, in their place
  QList<AttentionMap*> multiples_;
};

}  // namespace translution::ui
