#pragma once
// The papers' translation-robustness experiment, live for the slots' models:
//   * Move: the digit on the canvas slides along a path; each slot's probability
//     of the true class is plotted against the position (and a slider puts the
//     digit at any point of the path on the canvas).
//   * Sweep: accuracy at every canvas position for fixed test digits, one heat
//     map per slot on a shared 0-1 scale.
//   * Protocol: each slot's accuracy on the static, dynamic and moving test sets,
//     next to what it was trained on (Static->Static, Dynamic->Dynamic, Static->Dynamic).
#include <QList>
#include <QWidget>

#include "qcustomplot_include.h"
#include "tensor_metatype.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;
class QTableWidget;

namespace translution::ui {

class DigitCanvas;
class ModelSlot;

class RobustnessPanel : public QWidget {
  Q_OBJECT
 public:
  RobustnessPanel(QString data_dir, const QList<ModelSlot*>& slots, DigitCanvas* canvas, QWidget* parent = nullptr);

  QCustomPlot* movePlot() const { return move_plot_; }
  QCustomPlot* sweepPlot() const { return sweep_plot_; }
  QTableWidget* protocolTable() const { return table_; }
  bool busy() const { return busy_ > 0; }

 public Q_SLOTS:
  void slideAcross();
  void runSweep();
  void runProtocol();
  void setTrueClass(int label);

 private:
  void placeOnPath(int position);
  // The digit in `base` placed along the chosen path, every 2 pixels.
  QList<at::Tensor> pathCanvases(const at::Tensor& base) const;
  // Bookkeeping after background work; false (and the error shown) when it failed.
  bool finishTask(QPushButton* button, const QString& failure, const QString& error);

  QString data_dir_;
  QList<ModelSlot*> slots_;
  DigitCanvas* canvas_;
  QList<at::Tensor> slide_path_;  // the canvases of the last slide, which the slider and the plot show
  QComboBox *true_class_, *path_;
  QSlider* scrub_;
  QCustomPlot* move_plot_;
  QSpinBox *digits_, *stride_, *protocol_samples_;
  QPushButton *slide_, *sweep_, *protocol_;
  QProgressBar* progress_;
  QCustomPlot* sweep_plot_;
  QTableWidget* table_;
  QLabel* note_;
  int busy_ = 0;
};

}  // namespace translution::ui
