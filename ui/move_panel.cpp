#include "move_panel.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <ATen/ATen.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpacerItem>
#include <QStyle>
#include <QTimer>
#include <QVBoxLayout>

#include "bundled_models.h"
#include "image/ink.h"
#include "method_titles.h"
#include "model_slot.h"
#include "plot_export.h"
#include "plot_legend.h"
#include "reflow_layout.h"
#include "test_digit_source.h"

namespace translution::ui {
namespace {

// An animation frame every 60 ms: about 17 positions a second, smooth enough to follow by eye while the
// slots' predictions catch up with the newest frame.
constexpr int kFrameMs = 60;
// The demo starts its digit this far left of the centre: one whole patch of the bundled models.
constexpr int kDemoShift = 12;

// Mean of `values` at the frames in `at` (inside == true) or at all the others.
double mean_where(const QVector<double>& values, const QVector<int>& at, bool inside) {
  double sum = 0;
  int n = 0;
  for (int i = 0; i < values.size(); ++i)
    if (at.contains(i) == inside) {
      sum += values[i];
      ++n;
    }
  return n > 0 ? sum / n : std::nan("");
}

}  // namespace

MovePanel::MovePanel(const QList<ModelSlot*>& slots, DigitCanvas* canvas, TestDigitSource* digits,
                     QWidget* parent)
    : QGroupBox(tr("Move the digit along a path"), parent),
      canvas_(canvas),
      digits_(digits),
      animation_(new QTimer(this)) {
  buildControls();
  animation_->setInterval(kFrameMs);
  connect(animation_, &QTimer::timeout, this, &MovePanel::animationStep);
  // The true class is the canvas's: a new origin (another digit, a drawing, an undo) decides it afresh.
  connect(canvas_, &DigitCanvas::originChanged, this, [this] {
    if (!placing_) forgetPath();
    showTrueClass();
  });
  connect(canvas_, &DigitCanvas::inkEdited, this, &MovePanel::forgetPath);  // a new drawing: the path is gone
  connect(canvas_, &DigitCanvas::canvasChanged, this, &MovePanel::onCanvasChanged);
  setSlots(slots);
  showTrueClass();
}

void MovePanel::buildControls() {
  demo_ = new QPushButton(tr("▶ Centred-trained pair"), this);
  demo_->setObjectName("centredPairDemo");
  demo_->setToolTip(
      tr("The papers' point in one click: Translution and self-attention trained only on centred digits "
         "go into slots A and B, and a test digit slides across the canvas"));
  restore_ = new QPushButton(tr("Back to my models"), this);
  restore_->setObjectName("restoreModels");
  restore_->setEnabled(false);
  restore_->setToolTip(tr("Put back the models slots A and B held before the demo replaced them"));
  true_class_ = new QComboBox(this);
  for (int k = 0; k < 10; ++k) true_class_->addItem(QString::number(k), k);
  true_class_->setToolTip(tr("The digit's true class: a test digit's label, else what most slots predict"));
  direction_ = new QComboBox(this);
  direction_->addItems({tr("left to right"), tr("top to bottom"), tr("diagonal")});
  direction_->setToolTip(tr("The path through the canvas centre along which the digit slides"));
  slide_ = new QPushButton(tr("Slide across"), this);
  slide_->setToolTip(
      tr("Place the digit at every point of the path, plot each slot's probability, then move it "
         "across the canvas (click again to stop)"));
  scrub_ = new QSlider(Qt::Horizontal, this);
  scrub_->setObjectName("moveScrub");
  scrub_->setEnabled(false);
  scrub_->setToolTip(tr("Put the digit at this point of the path on the canvas"));
  plot_ = new QCustomPlot(this);
  plot_->setToolTip(
      tr("Each slot's probability of the true class with the digit's centre at each point of the path; "
         "right-click to save the plot"));
  plot_->xAxis->setLabel(tr("digit's centre along the path (canvas pixels)"));
  plot_->yAxis->setLabel(tr("P(true class)"));
  // A little room past 0 and 1: the curves run along both for long stretches, and the marker
  // at P = 1 would be cut in half by the frame.
  plot_->yAxis->setRange(-0.03, 1.05);
  plot_->xAxis->setRange(0, kStudioCanvas);
  plot_->legend->setVisible(false);  // shown, beneath the plot, once there are curves
  // Tall enough that a dip between two whole-patch lines reads at a glance: the demo is the tab's
  // point, and the pages beneath it scroll before it does.
  plot_->setMinimumSize(160, 210);
  enable_plot_export(plot_);
  showPlotHint();
  why_ = new QLabel(this);
  why_->setObjectName("moveStory");
  why_->setWordWrap(true);
  why_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  why_->setToolTip(tr("Why the curves look as they do"));
  numbers_ = new QLabel(this);
  numbers_->setObjectName("moveNumbers");
  numbers_->setWordWrap(true);
  numbers_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  numbers_->setToolTip(tr("What this plot shows, read off its curves"));
  layOut();
  explain(modelPatch());
  connect(demo_, &QPushButton::clicked, this, &MovePanel::showCentredPair);
  connect(restore_, &QPushButton::clicked, this, &MovePanel::restoreModels);
  connect(slide_, &QPushButton::clicked, this, [this] { animating() ? stopSlide() : slideAcross(); });
  connect(scrub_, &QSlider::valueChanged, this, &MovePanel::placeFrame);
  connect(plot_, &QCustomPlot::afterReplot, this, &MovePanel::alignScrub);
}

// Controls in two short rows over the plot and its slider; the story in a column beside them, never
// wider than a readable line, or beneath them where the page is too narrow for both (it then
// scrolls down, never sideways).
void MovePanel::layOut() {
  auto* first = new QHBoxLayout;
  first->addWidget(demo_);
  first->addWidget(restore_);
  first->addStretch(1);
  auto* second = new QHBoxLayout;
  second->addWidget(new QLabel(tr("True class"), this));
  second->addWidget(true_class_);
  second->addWidget(new QLabel(tr("Path"), this));
  second->addWidget(direction_);
  second->addWidget(slide_);
  second->addStretch(1);
  auto* demo = new QVBoxLayout;
  demo->addLayout(first);
  demo->addLayout(second);
  demo->addWidget(plot_, 1);
  scrub_left_ = new QSpacerItem(0, 0, QSizePolicy::Fixed, QSizePolicy::Minimum);
  scrub_right_ = new QSpacerItem(0, 0, QSizePolicy::Fixed, QSizePolicy::Minimum);
  scrub_row_ = new QHBoxLayout;
  scrub_row_->setSpacing(0);
  scrub_row_->addSpacerItem(scrub_left_);
  scrub_row_->addWidget(scrub_, 1);
  scrub_row_->addSpacerItem(scrub_right_);
  demo->addLayout(scrub_row_);
  auto* story = new QVBoxLayout;
  story->addWidget(why_);
  story->addWidget(numbers_);
  story->addStretch(1);
  auto* columns = new ReflowLayout(2, this);
  columns->addLayout(demo);
  columns->addLayout(story);
  columns->setColumnStretch(0, 5);
  columns->setColumnStretch(1, 2);
  why_->setMinimumWidth(160);
  why_->setMaximumWidth(340);
  numbers_->setMaximumWidth(340);
}

// The slider's handle stands under the plot's marker: its groove runs from the path's first
// frame to its last on the x axis (the frames are evenly spaced, as the slider's values are).
// Spacers beside it take the rest; a path not yet slid leaves the slider the plot's width.
void MovePanel::alignScrub() {
  int left = 0, right = 0;
  if (path_.size() >= 2) {
    const int half_handle = style()->pixelMetric(QStyle::PM_SliderLength, nullptr, scrub_) / 2;
    const double first = plot_->xAxis->coordToPixel(path_.along(0)),
                 last = plot_->xAxis->coordToPixel(path_.along(path_.size() - 1));
    left = std::max(0, int(std::lround(std::min(first, last))) - half_handle);
    right = std::max(0, plot_->width() - int(std::lround(std::max(first, last))) - half_handle);
  }
  if (scrub_left_->sizeHint().width() == left && scrub_right_->sizeHint().width() == right) return;
  scrub_left_->changeSize(left, 0, QSizePolicy::Fixed, QSizePolicy::Minimum);
  scrub_right_->changeSize(right, 0, QSizePolicy::Fixed, QSizePolicy::Minimum);
  scrub_row_->invalidate();
}

bool MovePanel::busy() const { return computing_ > 0 || animating(); }

bool MovePanel::animating() const { return animation_->isActive(); }

int MovePanel::trueClass() const { return true_class_->currentIndex(); }

QString MovePanel::story() const { return why_->text() + "\n" + numbers_->text(); }

double MovePanel::markerPosition() const {
  return marker_ && marker_->visible() ? marker_->point1->key() : std::numeric_limits<double>::quiet_NaN();
}

int MovePanel::modelPatch() const {
  for (const ModelSlot* s : slots_)
    if (s->predictor()) return int(s->predictor()->config().patch);
  return canvas_->patchSize();
}

void MovePanel::setSlots(const QList<ModelSlot*>& slots) {
  for (const QMetaObject::Connection& c : slot_connections_) disconnect(c);
  slot_connections_.clear();
  slots_ = slots;
  for (ModelSlot* s : slots_) {
    slot_connections_ << connect(s, &ModelSlot::predicted, this, &MovePanel::followMajority);
    slot_connections_ << connect(s, &ModelSlot::loaded, this, [this, s] { forgetSavedSlot(s); });
  }
  for (int i = int(saved_.size()) - 1; i >= 0; --i)
    if (!saved_[i].slot || !slots_.contains(saved_[i].slot.data())) saved_.removeAt(i);
  restore_->setEnabled(!saved_.isEmpty());
}

void MovePanel::showTrueClass() {
  const int label = canvas_->origin().label;
  if (label >= 0)
    true_class_->setCurrentIndex(std::clamp(label, 0, 9));
  else
    followMajority();
}

// Without a known label, the best guess of the true class is what most slots read.
void MovePanel::followMajority() {
  if (canvas_->origin().label >= 0) return;
  int votes[10] = {};
  for (const ModelSlot* s : slots_) {
    const auto& p = s->lastPrediction();
    if (p && p->canvas.defined() && p->canvas.gt(0).any().item<bool>() && p->predicted >= 0 &&
        p->predicted < 10)
      ++votes[p->predicted];
  }
  const int best = int(std::max_element(votes, votes + 10) - votes);
  if (votes[best] > 0) true_class_->setCurrentIndex(best);
}

// The canvas holds another digit: the slide's frames are not of it any more.
void MovePanel::forgetPath() {
  ++generation_;
  stopSlide();
  path_ = {};
  marks_on_ = false;
  canvas_->setPositionMarks({});
  const QSignalBlocker block(scrub_);
  scrub_->setEnabled(false);
}

void MovePanel::onCanvasChanged() {
  if (!isVisible()) return;
  const QPointF centre = canvas_->massCentre();
  if (centre.x() < 0) {
    moveMarker(std::nan(""));
    return;
  }
  moveMarker(path_.direction == SlideDirection::TopToBottom ? centre.y() : centre.x());
  const int frame = path_.frameAt(centre);
  if (marks_on_) showMarks(frame);
  if (!placing_ && frame >= 0) {  // dragged or nudged onto the path: the slider follows
    const QSignalBlocker block(scrub_);
    scrub_->setValue(frame);
  }
}

// The path's whole-patch positions as rings on the canvas (at pixel centres), the one the digit is at filled.
void MovePanel::showMarks(int current_frame) {
  QVector<QPointF> marks;
  for (int i : path_.whole_patch) marks << path_.centres[i] + QPointF(0.5, 0.5);
  canvas_->setPositionMarks(marks, int(path_.whole_patch.indexOf(current_frame)));
}

void MovePanel::placeFrame(int index) {
  if (index < 0 || index >= path_.size()) return;
  placing_ = true;
  // The same digit, moved: its origin stays, and a whole slide is one step of the undo history.
  canvas_->setPixels(path_.frames[index], canvas_->origin(), DigitCanvas::UndoStep::Continue);
  placing_ = false;
}

void MovePanel::slideAcross() {
  stopSlide();
  const auto direction = SlideDirection(direction_->currentIndex());
  const int patch = modelPatch();
  const SlidePath path = slide_path(canvas_->pixels(), direction, patch, patch % 2 == 0 ? 2 : 1);
  const QList<SlotWork> work = loaded_slots(slots_);
  if (path.empty() || work.isEmpty()) {
    numbers_->setText(path.empty() ? tr("Draw a digit or place a test digit first.")
                                   : tr("Load a model into a slot first."));
    return;
  }
  const int label = trueClass();
  struct Curves {
    QList<QVector<double>> values;
    QString error;
  };
  ++computing_;
  slide_->setEnabled(false);
  before_slide_ = canvas_->pixels();
  run_async<Curves>(
      this,
      [work, frames = path.frames, label] {
        Curves out;
        try {
          for (const SlotWork& s : work) {
            QVector<double> p;
            for (const at::Tensor& c : frames)
              p << s.predictor->predict(c, false).probabilities[size_t(label)];
            out.values << p;
          }
        } catch (const std::exception& e) {  // out of memory on a device, say: the panel says so
          out.error = QString::fromStdString(e.what()).section('\n', 0, 0);
        }
        return out;
      },
      [this, work, path, generation = generation_](const Curves& curves) {
        --computing_;
        slide_->setEnabled(true);
        if (generation != generation_) return;  // the canvas got another digit meanwhile
        if (!curves.error.isEmpty()) {
          numbers_->setText(tr("The slide failed: %1").arg(curves.error));
          return;
        }
        showSlide(work, path, curves.values);
        startAnimation();
      });
}

void MovePanel::showPlotHint() {
  auto* hint = new QCPItemText(plot_);
  hint->setObjectName("movePlotHint");
  hint->position->setType(QCPItemPosition::ptAxisRectRatio);
  hint->position->setCoords(0.5, 0.5);
  hint->setText(tr("Slide across: each slot's\nP(true class) along the path"));
  hint->setColor(palette().color(QPalette::PlaceholderText));
  hint->setClipToAxisRect(false);
}

void MovePanel::showSlide(const QList<SlotWork>& work, const SlidePath& path,
                          const QList<QVector<double>>& curves) {
  plot_->clearGraphs();
  plot_->clearItems();
  marker_ = nullptr;
  dots_.clear();
  path_ = path;
  drawWholePatchLines(path);
  QVector<double> x;
  for (int i = 0; i < path.size(); ++i) x << path.along(i);
  for (int s = 0; s < curves.size(); ++s) {
    QCPGraph* g = plot_->addGraph();
    g->setName(briefLegend(curves.size()) ? short_title(work[s]) : slot_title(work[s]));
    g->setPen(QPen(slot_colour(work[s].name), 2));
    g->setData(x, curves[s]);
  }
  addMarker();
  show_legend_beneath(plot_, 2);
  plot_->xAxis->setRange(0, kStudioCanvas);
  plot_->xAxis->setLabel(path.direction == SlideDirection::TopToBottom
                             ? tr("digit's centre y on the canvas (pixels)")
                             : tr("digit's centre x on the canvas (pixels)"));
  explain(int(work.front().predictor->config().patch));
  updateStory(work, curves);
  {
    const QSignalBlocker block(scrub_);
    scrub_->setRange(0, path.size() - 1);
    scrub_->setValue(std::max(0, path.start));
    scrub_->setEnabled(true);
  }
  marks_on_ = true;
  onCanvasChanged();  // the marker and the rings where the digit is now
  plot_->replot();
  Q_EMIT slid();
}

// A line at each whole-patch frame: dashed at the anchor (where training put the digit), dotted elsewhere.
void MovePanel::drawWholePatchLines(const SlidePath& path) {
  for (int i : path.whole_patch) {
    auto* line = new QCPItemStraightLine(plot_);
    line->setPen(QPen(QColor(90, 90, 90), 1, i == path.anchor ? Qt::DashLine : Qt::DotLine));
    line->point1->setCoords(path.along(i), 0);
    line->point2->setCoords(path.along(i), 1);
  }
}

// Where the digit is now: a vertical line and a dot on each curve.
void MovePanel::addMarker() {
  marker_ = new QCPItemStraightLine(plot_);
  marker_->setPen(QPen(QColor(200, 30, 30, 200), 1.5));
  marker_->setVisible(false);
  for (int g = 0; g < plot_->graphCount(); ++g) {
    auto* dot = new QCPItemTracer(plot_);
    dot->setGraph(plot_->graph(g));
    dot->setInterpolating(true);
    dot->setStyle(QCPItemTracer::tsCircle);
    dot->setSize(8);
    dot->setPen(QPen(plot_->graph(g)->pen().color().darker(130), 1.5));
    dot->setBrush(plot_->graph(g)->pen().color());
    dot->setVisible(false);
    dots_ << dot;
  }
}

void MovePanel::moveMarker(double along) {
  if (!marker_) return;
  const bool shown = !std::isnan(along);
  marker_->setVisible(shown);
  for (QCPItemTracer* dot : dots_) {
    dot->setVisible(shown);
    if (shown) dot->setGraphKey(along);
  }
  if (shown) {
    marker_->point1->setCoords(along, 0);
    marker_->point2->setCoords(along, 1);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void MovePanel::explain(int patch) {
  why_->setText(
      tr("Dotted lines: the digit shifted by whole patches (%1\u00a0px) from where training put it "
         "(dashed). Such a shift only permutes the patches, so a relative model (Translution) sees the same "
         "offsets between them, "
         "except at the border; a shift between the lines changes what every patch holds, and the curves "
         "dip there. The protocol table (its tab) tests at random positions, mostly not whole-patch ones: "
         "that "
         "is why S→D is low for every model.")
          .arg(patch));
}

void MovePanel::updateStory(const QList<SlotWork>& work, const QList<QVector<double>>& curves) {
  QStringList parts;
  for (int s = 0; s < curves.size(); ++s)
    parts << tr("%1\u00a0%2\u00a0/\u00a0%3")  // no break inside one slot's numbers
                 .arg(work[s].name)
                 .arg(mean_where(curves[s], path_.whole_patch, true), 0, 'f', 2)
                 .arg(mean_where(curves[s], path_.whole_patch, false), 0, 'f', 2);
  QStringList marks;  // what a brief legend's (S) and (D) say, in a line
  for (const SlotWork& w : work)
    if (const QString m = trained_mark(w.predictor->metadata()).trimmed();
        briefLegend(curves.size()) && !m.isEmpty() && !marks.contains(m))
      marks << m;
  std::sort(marks.begin(), marks.end(), std::greater<>());  // (S) before (D)
  for (QString& m : marks)
    m = m == "(S)" ? tr("(S) trained on centred digits") : tr("(D) on digits anywhere");
  numbers_->setText(
      tr("On this path, mean P(true class) on the lines / between them: %1.").arg(parts.join(", ")) +
      (marks.isEmpty() ? QString() : "\n" + marks.join(", ") + "."));
}

// A pair of curves keeps the slots' whole titles ("A: Translution, trained on centred digits"),
// which take a legend row each; three or four take the short ones ("A: Translution (S)"), which
// share rows, so the legend stays two rows high beneath a plot the demo's height allows.
bool MovePanel::briefLegend(int curves) { return curves > 2; }

void MovePanel::startAnimation() {
  if (!isVisible() || path_.size() < 2) return;  // a hidden panel's slide is not shown moving
  slide_->setText(tr("■ Stop"));
  {
    const QSignalBlocker block(scrub_);
    scrub_->setValue(0);
  }
  placeFrame(0);
  animation_->start();
}

void MovePanel::animationStep() {
  if (scrub_->value() < scrub_->maximum()) {
    scrub_->setValue(scrub_->value() + 1);  // places the frame
    return;
  }
  stopSlide();
  // Across and back where it was: the canvas ends as the slide found it.
  placing_ = true;
  canvas_->setPixels(before_slide_, canvas_->origin(), DigitCanvas::UndoStep::Continue);
  placing_ = false;
  const QSignalBlocker block(scrub_);
  scrub_->setValue(std::max(0, path_.start));
}

void MovePanel::stopSlide() {
  animation_->stop();
  slide_->setText(tr("Slide across"));
}

void MovePanel::showEvent(QShowEvent* event) {
  QGroupBox::showEvent(event);
  plot_->replot(QCustomPlot::rpQueuedReplot);  // laid out while the tab was hidden (at no size)
  marks_on_ = !path_.empty();
  onCanvasChanged();
}

void MovePanel::hideEvent(QHideEvent* event) {
  QGroupBox::hideEvent(event);
  stopSlide();
  marks_on_ = false;
  canvas_->setPositionMarks({});
}

void MovePanel::showCentredPair() {
  const QString sources[] = {bundled_model("translution-static"), bundled_model("attention-static")};
  if (sources[0].isEmpty() || sources[1].isEmpty() || slots_.size() < 2) {
    numbers_->setText(
        tr("This build has no models trained on centred digits (scripts/train_pretrained.sh makes them)."));
    return;
  }
  if (!digits_->ready()) {
    numbers_->setText(tr("The MNIST test digits are not loaded: %1").arg(digits_->error()));
    return;
  }
  for (int i = 0; i < 2; ++i) {  // the user's models, to go back to (a second click keeps the first's)
    ModelSlot* slot = slots_[i];
    const bool kept =
        std::any_of(saved_.begin(), saved_.end(), [slot](const SavedModel& m) { return m.slot == slot; });
    if (!kept && !slot->source().isEmpty() && slot->source() != sources[i])
      saved_ << SavedModel{slot, slot->source(), slot->device(), sources[i]};
  }
  restore_->setEnabled(!saved_.isEmpty());
  // A test digit one whole patch left of the centre: the slide then shows every position.
  const auto sample = digits_->sample(CanvasKind::Static, kDemoDigit);
  const CanvasOrigin origin{int(sample.label), tr("test #%1 (label %2, %3)")
                                                   .arg(sample.index)
                                                   .arg(sample.label)
                                                   .arg(canvas_kind_name(CanvasKind::Static))};
  canvas_->setPixels(shifted(sample.pixels, -kDemoShift, 0), origin);
  direction_->setCurrentIndex(int(SlideDirection::LeftToRight));
  ++computing_;
  auto pending = std::make_shared<int>(2);
  auto failures = std::make_shared<QStringList>();
  auto connections = std::make_shared<QList<QMetaObject::Connection>>();
  auto one_done = [this, pending, failures, connections](const QString& failure) {
    if (!failure.isEmpty()) *failures << failure;
    if (--*pending > 0) return;
    for (const auto& c : *connections) disconnect(c);
    --computing_;
    if (failures->isEmpty())
      slideAcross();
    else
      numbers_->setText(tr("Cannot load a centred-trained model: %1").arg(failures->join("; ")));
  };
  for (int i = 0; i < 2; ++i) {
    *connections << connect(slots_[i], &ModelSlot::loaded, this, [one_done] { one_done({}); });
    *connections << connect(slots_[i], &ModelSlot::failed, this,
                            [one_done](const QString& m) { one_done(m); });
  }
  for (int i = 0; i < 2; ++i) slots_[i]->load(sources[i], slots_[i]->device());
  Q_EMIT demoStarted();
}

void MovePanel::restoreModels() {
  for (const SavedModel& m : saved_)
    if (m.slot && m.slot->source() == m.demo_source) m.slot->load(m.source, m.device);
  saved_.clear();
  restore_->setEnabled(false);
}

// The user put another model into `slot` after the demo: there is nothing of it to go back to.
void MovePanel::forgetSavedSlot(ModelSlot* slot) {
  for (int i = int(saved_.size()) - 1; i >= 0; --i)
    if (saved_[i].slot == slot && slot->source() != saved_[i].demo_source) saved_.removeAt(i);
  restore_->setEnabled(!saved_.isEmpty());
}

}  // namespace translution::ui
