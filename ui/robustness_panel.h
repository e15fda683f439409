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
// brought forward when its experiment starts. The tab beneath gets the height its page
// asks for where both fit, the demo's plot the rest; where they do not, the demo keeps
// what it asks for up to three fifths (until the user moves the splitter). On a short
// screen the Move panel is the first of those tabs instead, so that no page is a
// scrolling sliver.
#include <QList>
#include <QWidget>

#include "move_panel.h"
#include "qcustomplot_include.h"
#include "sweep_maps.h"
#include "tensor_metatype.h"
#include "util/engine_options.h"

class QScrollArea;
class QSplitter;
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
  // Below this height (a 600 or 640 px tall screen) the demo is the first of the tabs rather
  // than above them.
  static constexpr int kCompactHeight = 560;
  bool compact() const;

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

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setCompact(bool compact);
  void fitSplit();

  MovePanel* move_;
  ProtocolBox* protocol_;
  SweepPanel* sweep_;
  ShiftMetricsPanel* shift_;
  QTabWidget* beneath_;  // the protocol table, the sweep maps and the shift metrics
  QSplitter* splitter_;  // the demo above the tabs, or the tabs alone where compact
  QScrollArea* move_page_;
  QScrollArea* protocol_page_;
  QScrollArea* sweep_page_;
  QScrollArea* shift_page_;
  bool split_by_user_ = false;  // the user moved the splitter: fitSplit leaves it
};

}  // namespace translution::ui
