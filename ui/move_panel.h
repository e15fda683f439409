#pragma once
// The Move experiment: the digit on the canvas slides along a path and each
// slot's probability of the true class is plotted against the position. A
// slider, or "Slide across" (an animation), puts the digit at any point of the
// path on the canvas, and a marker on the plot follows the digit. The one-click
// demo loads the pair trained on centred digits into slots A and B (keeping the
// user's models to go back to) and slides a test digit; beside the plot a few
// sentences say what the curves show and why.
#include <QGroupBox>
#include <QList>
#include <QPointer>
#include <QVector>

#include "digit_canvas.h"
#include "qcustomplot_include.h"
#include "slide_path.h"
#include "slot_work.h"

class QHBoxLayout;
class QSpacerItem;

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;

namespace translution::ui {

class ModelSlot;
class TestDigitSource;

class MovePanel : public QGroupBox {
  Q_OBJECT
 public:
  MovePanel(const QList<ModelSlot*>& slots, DigitCanvas* canvas, TestDigitSource* digits,
            QWidget* parent = nullptr);

  QCustomPlot* movePlot() const { return plot_; }
  // True while a slide is computed or animated, or the demo's models load.
  bool busy() const;
  bool animating() const;
  // The canvas's label (its origin travels with undo and moves); for a drawing, what most slots read.
  int trueClass() const;
  void setSlots(const QList<ModelSlot*>& slots);
  // Whether "Back to my models" has models to put back.
  bool canRestoreModels() const { return !saved_.isEmpty(); }
  // The path's frames, as the slider and the canvas marks use them.
  const SlidePath& path() const { return path_; }
  // Where the plot's marker stands (canvas pixels along the path's axis); NaN when hidden.
  double markerPosition() const;
  // What the story beside the plot says, the plot's own numbers included.
  QString story() const;
  // The test digit the one-click demo slides (MNIST test index 0, a 7).
  static constexpr int kDemoDigit = 0;

 public Q_SLOTS:
  void slideAcross();
  void stopSlide();
  void showCentredPair();
  void restoreModels();

 Q_SIGNALS:
  void slid();         // a slide's curves are plotted (its animation starts then)
  void demoStarted();  // the one-click demo placed its digit and loads its models

 protected:
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;

 private:
  struct SavedModel {
    QPointer<ModelSlot> slot;
    QString source, device, demo_source;
  };
  void buildControls();
  void layOut();
  void showTrueClass();
  void followMajority();
  void onCanvasChanged();
  void forgetPath();
  void placeFrame(int index);
  void showSlide(const QList<SlotWork>& work, const SlidePath& path, const QList<QVector<double>>& curves);
  void drawWholePatchLines(const SlidePath& path);
  void showPlotHint();  // what the empty plot will show, until the first slide
  void addMarker();
  void moveMarker(double along);
  void showMarks(int current);
  void startAnimation();
  void animationStep();
  void explain(int patch);
  void updateStory(const QList<SlotWork>& work, const QList<QVector<double>>& curves);
  static bool briefLegend(int curves);
  void alignScrub();
  void forgetSavedSlot(ModelSlot* slot);
  int modelPatch() const;

  QList<ModelSlot*> slots_;
  QList<QMetaObject::Connection> slot_connections_;
  DigitCanvas* canvas_;
  TestDigitSource* digits_;
  SlidePath path_;           // the last slide's frames, which the slider and the animation put on the canvas
  at::Tensor before_slide_;  // the canvas the animation returns to
  QList<SavedModel> saved_;  // the user's models the demo replaced, to go back to
  int generation_ = 0;       // bumped when the canvas gets a new digit: slides computed before are stale
  int computing_ = 0;        // slides and demo loads in flight
  bool marks_on_ = false;    // the canvas shows the path's whole-patch positions
  bool placing_ = false;     // the canvas change is this panel's own frame
  QComboBox *true_class_, *direction_;
  QSlider* scrub_;
  QSpacerItem* scrub_left_;  // the slider spans the path's first to last frame on the plot's axis
  QSpacerItem* scrub_right_;
  QHBoxLayout* scrub_row_;
  QCustomPlot* plot_;
  QCPItemStraightLine* marker_ = nullptr;
  QList<QCPItemTracer*> dots_;
  QPushButton *slide_, *demo_, *restore_;
  QLabel *why_, *numbers_;
  QTimer* animation_;
};

}  // namespace translution::ui
