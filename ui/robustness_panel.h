#pragma once
// The papers' translation-robustness experiment, live for the slots' models:
//   * Move: the digit on the canvas slides along a path; each slot's probability
//     of the true class is plotted against the position (and a slider puts the
//     digit at any point of the path on the canvas). One click loads the pair
//     trained on centred digits and slides a test digit, which shows the gap.
//   * Sweep: accuracy at every canvas position for fixed test digits, one heat
//     map per slot on a shared 0-1 scale, with the patch grid drawn over it.
//   * Protocol: Static->Static, Dynamic->Dynamic and Static->Dynamic for the
//     bundled pairs, or for models the user trains here (ProtocolBox).
#include <atomic>
#include <memory>

#include <QList>
#include <QWidget>

#include "qcustomplot_include.h"
#include "sweep_maps.h"
#include "tensor_metatype.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;

namespace translution::ui {

class DigitCanvas;
class ModelSlot;
class ProtocolBox;
class ProtocolTable;
class TestDigitSource;
struct SlotWork;

class RobustnessPanel : public QWidget {
  Q_OBJECT
 public:
  RobustnessPanel(QString data_dir, const QList<ModelSlot*>& slots, DigitCanvas* canvas, TestDigitSource* digits,
                  QWidget* parent = nullptr);
  ~RobustnessPanel() override;

  QCustomPlot* movePlot() const { return move_plot_; }
  SweepMaps* sweepMaps() const { return sweep_maps_; }
  ProtocolBox* protocol() const { return protocol_; }
  ProtocolTable* protocolTable() const;
  bool busy() const;
  int trueClass() const;
  void setSlots(const QList<ModelSlot*>& slots);
  // The test digit the one-click demo slides (MNIST test index 0, a 7).
  static constexpr int kDemoDigit = 0;

 public Q_SLOTS:
  void slideAcross();
  void runSweep();
  // The one-click demo: the centred-trained Translution and self-attention into
  // slots A and B, a test digit off-centre, slid across; the bundled pairs evaluated.
  void showCentredPair();
  // The label of the test digit on the canvas; -1 when the canvas holds something
  // else, and the true class then follows the slots' majority prediction.
  void setKnownLabel(int label);

 Q_SIGNALS:
  void slid();  // a slide's curves are plotted

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void buildMoveBox(QLayout* layout);
  void followMajority();
  void showSlide(const QList<SlotWork>& work, const QList<at::Tensor>& canvases,
                 const QList<QVector<double>>& curves, bool along_y);
  void showSweep(const QString& title, const SweepResult& result, int patch, const QColor& colour);
  // The digit in `base` placed along the chosen path, every 2 pixels.
  QList<at::Tensor> pathCanvases(const at::Tensor& base) const;

  QString data_dir_;
  QList<ModelSlot*> slots_;
  DigitCanvas* canvas_;
  TestDigitSource* digits_;
  QList<at::Tensor> slide_path_;  // the canvases of the last slide, which the slider and the plot show
  QList<TitledSweep> sweeps_;     // what the maps show, by title
  int known_label_ = -1;
  std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);  // set on close
  int busy_ = 0;
  QComboBox *true_class_, *path_;
  QSlider* scrub_;
  QCustomPlot* move_plot_;
  QSpinBox *digits_spin_, *stride_;
  QPushButton *slide_, *sweep_, *demo_;
  QProgressBar* progress_;
  SweepMaps* sweep_maps_;
  ProtocolBox* protocol_;
  QLabel* note_;
};

}  // namespace translution::ui
