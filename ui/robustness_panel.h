#pragma once
// The Robustness tab: the papers' translation-robustness experiments, live for
// the slots' models. A container that lays out three experiments and passes the
// slots on to them:
//   * MovePanel: the digit slid along a path, each slot's probability of the true
//     class against the position, and the one-click demo with the centred-trained pair;
//   * ProtocolBox: Static->Static, Dynamic->Dynamic and Static->Dynamic for the
//     bundled pairs, or for models the user trains here;
//   * SweepPanel: accuracy at every canvas position, one heat map per slot;
//   * ShiftMetricsPanel: the field's shift measures for the slots, and equivariance per layer.
// The Move panel stays on top (the demo's plot and its story); the protocol table,
// the sweep maps and the shift metrics share the space beneath as tabs, each
// brought forward when its experiment starts.
#include <QList>
#include <QWidget>

#include "move_panel.h"
#include "qcustomplot_include.h"
#include "sweep_maps.h"
#include "tensor_metatype.h"
#include "util/engine_options.h"

class QTabWidget;

namespace translution::ui {

class DigitCanvas;
class ModelSlot;
class ProtocolBox;
class ProtocolTable;
class ShiftMetricsPanel;
class SweepPanel;
class TestDigitSource;

class RobustnessPanel : public QWidget {
  Q_OBJECT
 public:
  // Its protocol experiments compute under `engine` (the slots' models under their own).
  RobustnessPanel(const EngineOptions& engine, QString data_dir, const QList<ModelSlot*>& slots,
                  DigitCanvas* canvas, TestDigitSource* digits, QWidget* parent = nullptr);

  MovePanel* movePanel() const { return move_; }
  SweepPanel* sweepPanel() const { return sweep_; }
  ProtocolBox* protocol() const { return protocol_; }
  ShiftMetricsPanel* shiftMetrics() const { return shift_; }
  QCustomPlot* movePlot() const;
  SweepMaps* sweepMaps() const;
  ProtocolTable* protocolTable() const;
  bool busy() const;
  int trueClass() const;
  void setSlots(const QList<ModelSlot*>& slots);
  // The test digit the one-click demo slides (MNIST test index 0, a 7).
  static constexpr int kDemoDigit = MovePanel::kDemoDigit;

 public Q_SLOTS:
  void slideAcross();
  void runSweep();
  void measureShiftMetrics();
  // The one-click demo: the centred-trained Translution and self-attention into
  // slots A and B, a test digit off-centre, slid across; the bundled pairs evaluated.
  void showCentredPair();

 Q_SIGNALS:
  void slid();                                // a slide's curves are plotted
  void sweepPassShown(int pass, int passes);  // a sweep pass's maps are on screen (0-based)

 private:
  MovePanel* move_;
  ProtocolBox* protocol_;
  SweepPanel* sweep_;
  ShiftMetricsPanel* shift_;
  QTabWidget* beneath_;  // the protocol table, the sweep maps and the shift metrics
};

}  // namespace translution::ui
