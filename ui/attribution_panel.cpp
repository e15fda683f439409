#include "attribution_panel.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <ATen/ATen.h>
#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QPixmap>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent>

#include "digit_canvas.h"
#include "image/attribution_picture.h"
#include "model_slot.h"
#include "plot_export.h"
#include "slot_box.h"
#include "slot_work.h"
#include "square_cells.h"

namespace translution::ui {
namespace {

enum Method { kIntegratedGradients, kOcclusionPatch, kOcclusionFour };

// The map's gradient: core's diverging ramp at its five anchors, so map, overlay and CLI picture agree.
QCPColorGradient diverging_gradient() {
  const at::Tensor rgb = diverging_ramp(at::linspace(-1, 1, 5)).contiguous();  // [5, 3] uint8
  const uint8_t* c = rgb.data_ptr<uint8_t>();
  QCPColorGradient g;
  g.clearColorStops();
  for (int i = 0; i < 5; ++i) g.setColorStopAt(i / 4.0, QColor(c[3 * i], c[3 * i + 1], c[3 * i + 2]));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  return g;
}

// Opacity 0..255 for |t| in [0, 1]: the square root, so that the many middling values stay visible.
at::Tensor opacity(const at::Tensor& t) { return (t.abs().sqrt() * 235).round().to(at::kByte).contiguous(); }

// The digit as on paper, grey ink on white, for the map's background: [S, S] in [0, 1].
QPixmap paper(const at::Tensor& canvas) {
  const at::Tensor grey = (255 - canvas.to(at::kFloat).clamp(0, 1) * 150).round().to(at::kByte).contiguous();
  const int h = int(grey.size(0)), w = int(grey.size(1));
  QImage image(w, h, QImage::Format_Grayscale8);
  for (int y = 0; y < h; ++y) std::copy_n(grey.data_ptr<uint8_t>() + y * w, w, image.scanLine(y));
  // Magnified here pixel by pixel: the axis rect scales its background smoothly, which would blur the ink.
  return QPixmap::fromImage(image.scaled(w * 8, h * 8, Qt::IgnoreAspectRatio, Qt::FastTransformation));
}

struct Request {
  std::shared_ptr<const Predictor> predictor;
  at::Tensor canvas;  // [S, S]
  int method = kIntegratedGradients;
  int64_t target = -1, steps = 32;
};

}  // namespace

struct AttributionPanel::Outcome {
  std::optional<Attribution> attribution;  // empty: stopped for a newer request, or failed
  at::Tensor canvas;
  QString error;
  double seconds = 0;
  int patch = 0;  // the model's, for the map's grid
};

QImage attribution_overlay(const at::Tensor& map, double limit) {
  const at::Tensor t = (map.to(at::kFloat) / float(limit)).clamp(-1, 1).contiguous();  // [S, S]
  // Opacity in proportion to |value|: the overlay's colours are the scale's ends at full strength,
  // where the panel's map fades its pale middle colours too, so the square root it uses would
  // make every middling pixel here look as strong as the map's darkest.
  const at::Tensor alpha = (t.abs() * 235).round().to(at::kByte).contiguous();  // [S, S]
  const int h = int(t.size(0)), w = int(t.size(1));
  QImage image(w, h, QImage::Format_ARGB32);
  const float* v = t.data_ptr<float>();
  const uint8_t* a = alpha.data_ptr<uint8_t>();
  // The scale's two ends, brightened: the canvas is black with white ink, where the map's pale
  // middle colours would read as ink. Only the hue says the sign; the opacity says how much.
  const QColor raises(255, 70, 70), lowers(70, 150, 255);
  for (int y = 0; y < h; ++y) {
    auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
    for (int x = 0; x < w; ++x) {
      const QColor& c = v[y * w + x] >= 0 ? raises : lowers;
      line[x] = qRgba(c.red(), c.green(), c.blue(), a[y * w + x]);
    }
  }
  return image;
}

AttributionPanel::AttributionPanel(const QList<ModelSlot*>& slots, DigitCanvas* canvas, QWidget* parent)
    : QWidget(parent),
      canvas_(canvas),
      slot_box_(new SlotBox(this)),
      class_box_(new QComboBox(this)),
      method_box_(new QComboBox(this)),
      steps_(new QSpinBox(this)),
      overlay_box_(new QCheckBox(tr("Show on canvas"), this)),
      summary_(new QLabel(this)),
      plot_(new QCustomPlot(this)),
      ticket_(std::make_shared<std::atomic<int>>(0)) {
  slot_box_->setObjectName("attributionSlot");
  slot_box_->setToolTip(tr("Whose prediction to explain"));
  class_box_->setObjectName("attributionClass");
  class_box_->setToolTip(tr("The class whose logit is attributed: the one the model predicts, or any digit"));
  method_box_->setObjectName("attributionMethod");
  method_box_->addItems({tr("Integrated gradients"), tr("Occlusion, patch"), tr("Occlusion, 4 px")});
  method_box_->setToolTip(
      tr("Integrated gradients: each pixel's share of the logit's rise from the black canvas.\n"
         "Occlusion: how much the logit falls when a tile (a patch, or 4 x 4 pixels) is "
         "blacked out."));
  steps_->setObjectName("attributionSteps");
  steps_->setRange(1, 512);
  steps_->setValue(32);
  steps_->setToolTip(
      tr("Integrated gradients: points on the path from the black canvas (more: a smaller gap "
         "between the map's sum and the logit's rise, and slower)"));
  overlay_box_->setObjectName("attributionOverlay");
  overlay_box_->setToolTip(
      tr("Draw the map over the digit on the canvas, translucent (red raises the class, blue "
         "lowers it); kept up to date while you draw"));
  summary_->setObjectName("attributionSummary");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* controls = new QGridLayout;
  controls->addWidget(new QLabel(tr("Model"), this), 0, 0);
  controls->addWidget(slot_box_, 0, 1);
  controls->addWidget(new QLabel(tr("Class"), this), 0, 2);
  controls->addWidget(class_box_, 0, 3);
  controls->addWidget(new QLabel(tr("Method"), this), 1, 0);
  controls->addWidget(method_box_, 1, 1);
  controls->addWidget(new QLabel(tr("Steps"), this), 1, 2);
  controls->addWidget(steps_, 1, 3);
  controls->addWidget(overlay_box_, 1, 4);
  controls->setColumnStretch(5, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(summary_);
  layout->addWidget(plot_, 1);
  setTabOrder(slot_box_, class_box_);
  setTabOrder(class_box_, method_box_);
  setTabOrder(method_box_, steps_);
  setTabOrder(steps_, overlay_box_);

  buildPlot();

  connect(slot_box_, &QComboBox::currentIndexChanged, this, [this] {
    updateClasses();
    restart();
  });
  connect(class_box_, &QComboBox::currentIndexChanged, this, &AttributionPanel::restart);
  connect(method_box_, &QComboBox::currentIndexChanged, this, [this](int method) {
    steps_->setEnabled(method == kIntegratedGradients);
    restart();
  });
  connect(steps_, &QSpinBox::valueChanged, this, &AttributionPanel::restart);
  connect(overlay_box_, &QCheckBox::toggled, this, [this] {
    updateOverlay();
    startNext();  // the overlay wants a map even while the tab is hidden
  });
  setSlots(slots);
  clearMap(tr("Load a model into a slot to see what its prediction rests on."));
}

// One map on square cells, the canvas's rows downwards, its diverging scale on the right.
void AttributionPanel::buildPlot() {
  plot_->setMinimumSize(160, 160);
  enable_plot_export(plot_);
  plot_->plotLayout()->clear();
  auto* rect = new QCPAxisRect(plot_);
  plot_->plotLayout()->addElement(0, 0, rect);
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  y->setRangeReversed(true);  // canvas rows grow downwards
  x->setLabel(tr("x (canvas px)"));
  y->setLabel(tr("y (canvas px)"));
  map_ = new QCPColorMap(x, y);
  map_->setInterpolate(false);
  scale_ = new QCPColorScale(plot_);
  scale_->setGradient(diverging_gradient());
  scale_->setBarWidth(12);
  scale_->setLabel(tr("attribution (logit units; red raises the class)"));
  scale_->setDataRange(QCPRange(-1, 1));
  map_->setColorScale(scale_);
  plot_->plotLayout()->addElement(0, 1, scale_);
  connect(plot_, &QCustomPlot::afterLayout, this, [this, rect] {
    fit_square_cells(rect);
    place_scale_beside(scale_, rect);  // the bar spans the map, not the plot's height
  });
}

AttributionPanel::~AttributionPanel() {
  ++*ticket_;  // work still running stops at its next batch
}

void AttributionPanel::setSlots(const QList<ModelSlot*>& slots) {
  for (ModelSlot* s : slot_box_->slots())
    if (slots.contains(s)) disconnect(s, nullptr, this, nullptr);
  slot_box_->setSlots(slots);
  for (ModelSlot* s : slots)
    connect(s, &ModelSlot::loaded, this, [this, s] {
      if (shownSlot() == s) {
        updateClasses();
        restart();
      }
    });
  updateClasses();
  restart();
}

ModelSlot* AttributionPanel::shownSlot() const { return slot_box_->shown(); }

// "predicted", then one entry per class of the shown model (the choice kept where it still exists).
void AttributionPanel::updateClasses() {
  ModelSlot* slot = shownSlot();
  const int classes = slot && slot->predictor() ? int(slot->predictor()->config().classes) : 10;
  if (class_box_->count() == classes + 1) return;
  const QSignalBlocker block(class_box_);
  const int chosen = class_box_->currentIndex();
  class_box_->clear();
  class_box_->addItem(tr("predicted"));
  for (int k = 0; k < classes; ++k) class_box_->addItem(QString::number(k));
  class_box_->setCurrentIndex(chosen >= 0 && chosen <= classes ? chosen : 0);
}

void AttributionPanel::setCanvas(const at::Tensor& canvas) {
  canvas_pixels_ = canvas.detach().clone();
  canvas_->clearOverlay();  // it belongs to the canvas before; the new one follows
  restart();
}

bool AttributionPanel::wanted() const { return isVisible() || overlay_box_->isChecked(); }

bool AttributionPanel::busy() const {
  ModelSlot* slot = shownSlot();
  return running_ || (pending_ && wanted() && slot && slot->predictor());
}

QString AttributionPanel::summary() const { return summary_->text(); }

void AttributionPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  startNext();
}

void AttributionPanel::restart() {
  ++*ticket_;  // what runs now answers an older request
  pending_ = canvas_pixels_.defined();
  startNext();
}

void AttributionPanel::startNext() {
  ModelSlot* slot = shownSlot();
  const auto predictor = slot ? slot->predictor() : nullptr;
  if (running_ || !pending_ || !wanted()) return;
  if (!predictor) return clearMap(tr("Slot %1 has no model.").arg(slot ? slot->name() : QString("?")));
  if (blank_canvas(canvas_pixels_)) {
    pending_ = false;
    return clearMap(tr("The canvas is empty: draw a digit, or pick a test digit."));
  }
  pending_ = false;
  running_ = true;
  Request r{predictor, canvas_pixels_, method_box_->currentIndex(), class_box_->currentIndex() - 1,
            steps_->value()};
  const int ticket = *ticket_;
  auto latest = ticket_;
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, ticket] {
    watcher->deleteLater();
    finish(watcher->result(), ticket);
  });
  watcher->setFuture(QtConcurrent::run([r, ticket, latest] {
    Outcome out;
    out.canvas = r.canvas;
    out.patch = int(r.predictor->config().patch);
    const auto start = std::chrono::steady_clock::now();
    const AttributionProgress still_newest = [ticket, latest](int64_t, int64_t) { return *latest == ticket; };
    try {
      if (r.method == kIntegratedGradients) {
        IntegratedGradientsOptions o;
        o.target = r.target;
        o.steps = r.steps;
        o.progress = still_newest;
        out.attribution = integrated_gradients(r.predictor->engine(), r.predictor->model(),
                                               r.predictor->device(), r.canvas, o);
      } else {
        OcclusionOptions o;
        o.target = r.target;
        o.progress = still_newest;
        o.occluder = r.method == kOcclusionFour ? 4 : r.predictor->config().patch;
        out.attribution =
            occlusion(r.predictor->engine(), r.predictor->model(), r.predictor->device(), r.canvas, o);
      }
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }));
}

void AttributionPanel::finish(const Outcome& out, int ticket) {
  running_ = false;
  if (ticket == *ticket_) {  // else a newer canvas or setting came meanwhile: drop it
    if (out.attribution) {
      shown_ = out.attribution;
      shown_canvas_ = out.canvas;
      showAttribution(*out.attribution, out.seconds, out.patch);
      Q_EMIT attributed();
    } else if (!out.error.isEmpty()) {
      clearMap(tr("No attribution: %1").arg(out.error));
    }
  }
  startNext();
}

void AttributionPanel::showAttribution(const Attribution& a, double seconds, int patch) {
  const at::Tensor map = a.map.to(at::kDouble).contiguous();  // [S, S]
  const int h = int(map.size(0)), w = int(map.size(1));
  const double limit = symmetric_limit(a.map);
  const at::Tensor alpha =
      opacity((map / limit).clamp(-1, 1));  // [S, S]: the digit shows where little is attributed
  const double* v = map.data_ptr<double>();
  map_->data()->setSize(w, h);
  map_->data()->setRange(QCPRange(0.5, w - 0.5), QCPRange(0.5, h - 0.5));  // cell centres
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      map_->data()->setCell(x, y, v[y * w + x]);
      map_->data()->setAlpha(x, y, alpha.data_ptr<uint8_t>()[y * w + x]);
    }
  scale_->setDataRange(QCPRange(-limit, limit));
  plot_->setToolTip(
      tr("Each canvas pixel's attribution over the digit (grey). Colours saturate at ±%1, the 99th "
         "percentile of |attribution|; the faintest are nearly transparent.")
          .arg(limit, 0, 'g', 3));
  map_->keyAxis()->axisRect()->setBackground(paper(shown_canvas_), true, Qt::IgnoreAspectRatio);
  map_->keyAxis()->setRange(0, w);
  map_->valueAxis()->setRange(0, h);
  integer_ticks(map_->keyAxis(), patch);  // the grid on the patches' borders, as on the canvas
  integer_ticks(map_->valueAxis(), patch);
  const int64_t predicted = a.logits.argmax().item<int64_t>();
  QString text = tr("Class %1 (the model predicts %2), logit %3. ")
                     .arg(a.target)
                     .arg(predicted)
                     .arg(a.logit(), 0, 'f', 2);
  if (a.steps > 0)
    text +=
        tr("Integrated gradients, %1 steps from the black canvas: the map sums to %2; the logit rose by %3 "
           "(gap %4%).")
            .arg(a.steps)
            .arg(a.total(), 0, 'f', 2)
            .arg(a.logit_difference(), 0, 'f', 2)
            .arg(100 * a.completeness_gap(), 0, 'f', 1);
  else
    text += tr("Occlusion, %1\u00a0px tiles: each tile shows how much the logit falls when it is blacked out "
               "(blue: it rises); largest fall %2.")
                .arg(a.occluder)
                .arg(a.map.max().item<double>(), 0, 'f', 2);
  summary_->setText(text + tr(" %1\u00a0s.").arg(seconds, 0, 'f', 2));  // the unit never alone on a line
  plot_->replot();
  updateOverlay();
}

void AttributionPanel::clearMap(const QString& message) {
  shown_.reset();
  shown_canvas_ = at::Tensor();
  map_->data()->clear();
  map_->keyAxis()->axisRect()->setBackground(QPixmap());
  summary_->setText(message);
  plot_->replot();
  updateOverlay();
}

void AttributionPanel::updateOverlay() {
  const bool current = shown_ && canvas_pixels_.defined() && at::equal(shown_canvas_, canvas_pixels_);
  if (overlay_box_->isChecked() && current)
    canvas_->setOverlay(attribution_overlay(shown_->map, symmetric_limit(shown_->map)));
  else
    canvas_->clearOverlay();
}

}  // namespace translution::ui
