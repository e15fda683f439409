#pragma once
// Which pixels a slot's class rests on, for the digit on the canvas: Integrated
// Gradients or occlusion against the black canvas (core/infer/attribution.h), as
// a map on a diverging colour scale centred on 0 (red raises the class's logit,
// blue lowers it) and, when asked, as a translucent overlay on the canvas.
// Computed off the GUI thread whenever the canvas or a setting changes, while the
// tab is shown or the overlay is on: the newest request wins, work for an older
// one stops at its next batch and its result is dropped.
#include <atomic>
#include <memory>
#include <optional>

#include <QImage>
#include <QList>
#include <QWidget>

#include "infer/attribution.h"
#include "qcustomplot_include.h"
#include "tensor_metatype.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace translution::ui {

class DigitCanvas;
class ModelSlot;
class SlotBox;

// The overlay's picture of `map` [S, S]: each pixel coloured on the diverging scale
// from -limit to +limit, its opacity in proportion to |value| (0 is transparent).
QImage attribution_overlay(const at::Tensor& map, double limit);

class AttributionPanel : public QWidget {
  Q_OBJECT
 public:
  AttributionPanel(const QList<ModelSlot*>& slots, DigitCanvas* canvas, QWidget* parent = nullptr);
  ~AttributionPanel() override;
  void setSlots(const QList<ModelSlot*>& slots);
  // The newest canvas ([S, S] in [0, 1]); attributed as soon as the panel is free.
  void setCanvas(const at::Tensor& canvas);

  bool busy() const;
  // What the map shows, and the canvas it was computed for (empty before the first).
  const std::optional<Attribution>& attribution() const { return shown_; }
  const at::Tensor& attributedCanvas() const { return shown_canvas_; }
  QString summary() const;
  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colourMap() const { return map_; }
  QCPColorScale* colourScale() const { return scale_; }

 Q_SIGNALS:
  void attributed();  // attribution() is new

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  struct Outcome;
  void buildPlot();
  ModelSlot* shownSlot() const;
  bool wanted() const;  // whether to compute now: shown, or drawing on the canvas
  void restart();       // settings or model changed: the current canvas again
  void startNext();
  void finish(const Outcome& outcome, int ticket);
  void showAttribution(const Attribution& a, double seconds, int patch);
  void clearMap(const QString& message);
  void updateOverlay();
  void updateClasses();

  DigitCanvas* canvas_;
  SlotBox* slot_box_;
  QComboBox *class_box_, *method_box_;
  QSpinBox* steps_;
  QCheckBox* overlay_box_;
  QLabel* summary_;
  QCustomPlot* plot_;
  QCPColorMap* map_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  at::Tensor canvas_pixels_;  // the newest canvas
  bool pending_ = false;      // canvas_pixels_ not yet started
  bool running_ = false;
  std::shared_ptr<std::atomic<int>> ticket_;  // the newest request; older work stops and is dropped
  std::optional<Attribution> shown_;
  at::Tensor shown_canvas_;
};

}  // namespace translution::ui
