#include "robustness_panel.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "bundled_models.h"
#include "digit_canvas.h"
#include "model_slot.h"
#include "plot_export.h"
#include "protocol_box.h"
#include "protocol_table.h"
#include "test_digit_source.h"
#include "train/translation_sweep.h"
#include "util/error.h"

namespace translution::ui {

// A loaded slot's model, taken for work off the GUI thread (the slot may load another meanwhile).
struct SlotWork {
  QString name;
  std::shared_ptr<const Predictor> predictor;
};

namespace {

// One colour per slot letter, the same in every plot of this panel.
QColor slot_colour(const QString& name) {
  const QColor colours[] = {QColor(230, 120, 30), QColor(31, 119, 180), QColor(44, 160, 44), QColor(148, 103, 189)};
  return colours[std::clamp(name.isEmpty() ? 0 : name[0].unicode() - u'A', 0, 3)];
}

struct Ink {
  int top = 0, left = 0, height = 0, width = 0;
  bool empty() const { return height == 0; }
};

Ink ink_box(const at::Tensor& canvas) {
  const at::Tensor mask = canvas > 0.05;
  const at::Tensor rows = mask.any(1).nonzero().flatten(), cols = mask.any(0).nonzero().flatten();
  if (rows.numel() == 0) return {};
  const int top = int(rows.min().item<int64_t>()), left = int(cols.min().item<int64_t>());
  return {top, left, int(rows.max().item<int64_t>()) - top + 1, int(cols.max().item<int64_t>()) - left + 1};
}

// `canvas` moved `dx` pixels to the right (left when negative); what leaves the canvas is lost.
at::Tensor shifted_x(const at::Tensor& canvas, int dx) {
  at::Tensor out = at::zeros_like(canvas);
  const int64_t n = canvas.size(1) - std::abs(dx);
  out.narrow(1, std::max(0, dx), n).copy_(canvas.narrow(1, std::max(0, -dx), n));
  return out;
}

template <typename T>
void run_async(QObject* owner, std::function<T()> work, std::function<void(const T&)> done) {
  auto* watcher = new QFutureWatcher<T>(owner);
  QObject::connect(watcher, &QFutureWatcher<T>::finished, owner, [watcher, done] {
    done(watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run(std::move(work)));
}

QList<SlotWork> loaded_slots(const QList<ModelSlot*>& slots) {
  QList<SlotWork> out;
  for (ModelSlot* s : slots)
    if (s->predictor()) out << SlotWork{s->name(), s->predictor()};
  return out;
}

QString slot_title(const SlotWork& s) {
  const QString bundled = bundled_model_title(QString::fromStdString(s.predictor->source()));
  return QObject::tr("%1: %2").arg(s.name, bundled.isEmpty() ? QString::fromStdString(s.predictor->config().model) : bundled);
}

// The legend beneath the plot, two entries a row, so that it never hides a curve.
// Moved there only once it has entries: QCustomPlot lays an empty legend out in
// that row at no width and the axis rect above it with it.
void showLegendBeneath(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  if (legend->layout() != plot->plotLayout()) {
    plot->axisRect()->insetLayout()->take(legend);
    plot->plotLayout()->addElement(1, 0, legend);
    plot->plotLayout()->setRowStretchFactor(1, 0.001);
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setWrap(2);
    legend->setBorderPen(Qt::NoPen);
  }
  legend->setVisible(true);
}

// Every slot's sweep at once, one thread each (the studio runs each model's
// products on one thread, so the slots share the cores this way).
QList<SweepResult> sweep_slots(const QList<SlotWork>& work, const MnistDigits& test, const SweepOptions& options,
                               const std::function<void(int64_t, int64_t)>& progress) {
  std::vector<SweepResult> results(size_t(work.size()));
  std::vector<std::exception_ptr> failures(size_t(work.size()));
  std::vector<std::atomic<int64_t>> done(size_t(work.size()));
  auto sweep_one = [&](size_t i) {
    try {
      results[i] = translation_sweep(work[int(i)].predictor->model(), test, options, work[int(i)].predictor->device(),
                                     [&, i](int64_t d, int64_t total) {
                                       done[i] = d;
                                       int64_t sum = 0;
                                       for (const auto& v : done) sum += v;
                                       progress(sum, total * int64_t(done.size()));
                                     });
    } catch (...) {
      failures[i] = std::current_exception();
    }
  };
  std::vector<std::thread> others;
  for (size_t i = 1; i < results.size(); ++i) others.emplace_back(sweep_one, i);
  if (!results.empty()) sweep_one(0);
  for (std::thread& t : others) t.join();
  for (const std::exception_ptr& f : failures)
    if (f) std::rethrow_exception(f);
  return QList<SweepResult>(results.begin(), results.end());
}

// "A: translution (S)": the slot, the method and what it was trained on, short enough for a map's title.
QString short_title(const SlotWork& s) {
  const auto& meta = s.predictor->metadata();
  const auto dataset = meta.find("dataset");
  QString trained;
  if (dataset != meta.end() && dataset->second == "static") trained = " (S)";
  if (dataset != meta.end() && dataset->second == "dynamic") trained = " (D)";
  return QObject::tr("%1: %2%3").arg(s.name, QString::fromStdString(s.predictor->config().model), trained);
}

}  // namespace

RobustnessPanel::RobustnessPanel(QString data_dir, const QList<ModelSlot*>& slots, DigitCanvas* canvas,
                                 TestDigitSource* digits, QWidget* parent)
    : QWidget(parent), data_dir_(std::move(data_dir)), canvas_(canvas), digits_(digits) {
  auto* layout = new QVBoxLayout(this);
  buildMoveBox(layout);

  auto* sweep_box = new QGroupBox(tr("Translation sweep: accuracy with the digit's centre at each canvas position"), this);
  auto* sweep_controls = new QHBoxLayout;
  digits_spin_ = new QSpinBox(this);
  digits_spin_->setRange(1, 10000);
  digits_spin_->setValue(100);
  digits_spin_->setToolTip(tr("The first N test digits are placed at every position"));
  stride_ = new QSpinBox(this);
  stride_->setRange(1, 28);
  stride_->setValue(2);
  stride_->setToolTip(tr("Pixels between positions"));
  sweep_ = new QPushButton(tr("Sweep the slots"), this);
  progress_ = new QProgressBar(this);
  sweep_controls->addWidget(new QLabel(tr("Digits"), this));
  sweep_controls->addWidget(digits_spin_);
  sweep_controls->addWidget(new QLabel(tr("Stride"), this));
  sweep_controls->addWidget(stride_);
  sweep_controls->addWidget(sweep_);
  sweep_controls->addWidget(progress_, 1);
  sweep_maps_ = new SweepMaps(this);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  auto* sweep_layout = new QVBoxLayout(sweep_box);
  sweep_layout->addLayout(sweep_controls);
  sweep_layout->addWidget(sweep_maps_, 1);
  sweep_layout->addWidget(note_);
  protocol_ = new ProtocolBox(data_dir_, this);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(sweep_box, 3);
  bottom->addWidget(protocol_, 2);
  layout->addLayout(bottom, 3);

  connect(sweep_, &QPushButton::clicked, this, &RobustnessPanel::runSweep);
  connect(protocol_, &ProtocolBox::sweepReady, this, [this](const QString& title, const SweepResult& r) {
    showSweep(title, r, 12, QColor());
  });
  setSlots(slots);
}

void RobustnessPanel::buildMoveBox(QLayout* layout) {
  auto* move_box = new QGroupBox(tr("Move the digit: probability of the true class along a path"), this);
  auto* move_controls = new QHBoxLayout;
  demo_ = new QPushButton(tr("▶ Centred-trained pair"), this);
  demo_->setObjectName("centredPairDemo");
  demo_->setToolTip(tr("The papers' point in one click: Translution and self-attention trained only on centred digits "
                       "go into slots A and B, and a test digit slides across the canvas"));
  true_class_ = new QComboBox(this);
  for (int k = 0; k < 10; ++k) true_class_->addItem(QString::number(k), k);
  true_class_->setToolTip(tr("The digit's true class: a test digit's label, else what most slots predict"));
  path_ = new QComboBox(this);
  path_->addItems({tr("left to right"), tr("top to bottom"), tr("corner to corner")});
  slide_ = new QPushButton(tr("Slide across"), this);
  slide_->setToolTip(tr("Place the current digit at every point of the path and plot each slot's probability"));
  scrub_ = new QSlider(Qt::Horizontal, this);
  scrub_->setEnabled(false);
  scrub_->setToolTip(tr("Put the digit at this point of the path on the canvas"));
  move_controls->addWidget(demo_);
  move_controls->addSpacing(12);
  move_controls->addWidget(new QLabel(tr("True class"), this));
  move_controls->addWidget(true_class_);
  move_controls->addWidget(new QLabel(tr("Path"), this));
  move_controls->addWidget(path_);
  move_controls->addWidget(slide_);
  move_controls->addWidget(scrub_, 1);
  move_plot_ = new QCustomPlot(this);
  move_plot_->xAxis->setLabel(tr("digit's centre along the path (canvas pixels); dotted: whole-patch shifts from the centre"));
  move_plot_->yAxis->setLabel(tr("P(true class)"));
  move_plot_->yAxis->setRange(0, 1);
  move_plot_->xAxis->setRange(0, kStudioCanvas);
  move_plot_->legend->setVisible(false);  // shown, beneath the plot, once there are curves
  move_plot_->setMinimumHeight(150);
  enable_plot_export(move_plot_);
  auto* move_layout = new QVBoxLayout(move_box);
  move_layout->addLayout(move_controls);
  move_layout->addWidget(move_plot_, 1);
  static_cast<QBoxLayout*>(layout)->addWidget(move_box, 2);
  connect(demo_, &QPushButton::clicked, this, &RobustnessPanel::showCentredPair);
  connect(slide_, &QPushButton::clicked, this, &RobustnessPanel::slideAcross);
  connect(scrub_, &QSlider::valueChanged, this, [this](int position) {
    if (position >= 0 && position < slide_path_.size()) canvas_->setPixels(slide_path_[position]);
  });
}

// The plots were laid out while the tab was hidden (at no size): lay them out again when shown.
void RobustnessPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  move_plot_->replot(QCustomPlot::rpQueuedReplot);
  sweep_maps_->replot(QCustomPlot::rpQueuedReplot);
}

RobustnessPanel::~RobustnessPanel() { *cancel_ = true; }  // a running sweep stops at its next position

ProtocolTable* RobustnessPanel::protocolTable() const { return protocol_->table(); }

bool RobustnessPanel::busy() const { return busy_ > 0 || protocol_->busy(); }

int RobustnessPanel::trueClass() const { return true_class_->currentIndex(); }

void RobustnessPanel::setSlots(const QList<ModelSlot*>& slots) {
  for (ModelSlot* s : slots_)
    if (slots.contains(s)) disconnect(s, &ModelSlot::predicted, this, &RobustnessPanel::followMajority);
  slots_ = slots;
  for (ModelSlot* s : slots_) connect(s, &ModelSlot::predicted, this, &RobustnessPanel::followMajority);
  protocol_->setSlots(slots);
}

void RobustnessPanel::setKnownLabel(int label) {
  known_label_ = label;
  if (label >= 0) true_class_->setCurrentIndex(std::clamp(label, 0, 9));
  else followMajority();
}

// Without a known label, the best guess of the true class is what most slots read.
void RobustnessPanel::followMajority() {
  if (known_label_ >= 0) return;
  int votes[10] = {};
  for (const ModelSlot* s : slots_) {
    const auto& p = s->lastPrediction();
    if (p && p->canvas.defined() && p->canvas.gt(0).any().item<bool>() && p->predicted >= 0 && p->predicted < 10)
      ++votes[p->predicted];
  }
  const int best = int(std::max_element(votes, votes + 10) - votes);
  if (votes[best] > 0) true_class_->setCurrentIndex(best);
}

QList<at::Tensor> RobustnessPanel::pathCanvases(const at::Tensor& base) const {
  QList<at::Tensor> out;
  const Ink ink = ink_box(base);
  if (ink.empty()) return out;
  const int size = int(base.size(0));
  const at::Tensor crop = base.narrow(0, ink.top, ink.height).narrow(1, ink.left, ink.width);
  const int span_x = size - ink.width, span_y = size - ink.height;
  const int steps = std::max(span_x, span_y) / 2 + 1;  // every 2 pixels along the longer span
  for (int i = 0; i < steps; ++i) {
    const double t = steps > 1 ? double(i) / (steps - 1) : 0.0;
    int x = ink.left, y = ink.top;
    if (path_->currentIndex() != 1) x = int(std::lround(t * span_x));
    if (path_->currentIndex() != 0) y = int(std::lround(t * span_y));
    at::Tensor c = at::zeros_like(base);
    c.narrow(0, y, ink.height).narrow(1, x, ink.width).copy_(crop);
    out << c;
  }
  return out;
}

void RobustnessPanel::slideAcross() {
  const QList<at::Tensor> canvases = pathCanvases(canvas_->pixels());
  if (canvases.isEmpty()) {
    note_->setText(tr("Draw a digit or place a test digit first."));
    return;
  }
  const QList<SlotWork> work = loaded_slots(slots_);
  const int label = true_class_->currentIndex();
  const bool along_y = path_->currentIndex() == 1;  // as requested, whatever the combo says when it ends
  struct Curves {
    QList<QVector<double>> values;
    QString error;
  };
  ++busy_;
  slide_->setEnabled(false);
  run_async<Curves>(
      this,
      [work, canvases, label] {
        Curves out;
        try {
          for (const SlotWork& s : work) {
            QVector<double> p;
            for (const at::Tensor& c : canvases) p << s.predictor->predict(c, false).probabilities[size_t(label)];
            out.values << p;
          }
        } catch (const std::exception& e) {  // out of memory on a device, say: the panel says so
          out.error = QString::fromStdString(e.what()).section('\n', 0, 0);
        }
        return out;
      },
      [this, work, canvases, along_y](const Curves& curves) {
        --busy_;
        slide_->setEnabled(true);
        if (!curves.error.isEmpty()) {
          note_->setText(tr("The slide failed: %1").arg(curves.error));
          return;
        }
        showSlide(work, canvases, curves.values, along_y);
      });
}

void RobustnessPanel::showSlide(const QList<SlotWork>& work, const QList<at::Tensor>& canvases,
                                const QList<QVector<double>>& curves, bool along_y) {
  move_plot_->clearGraphs();
  move_plot_->clearItems();
  // x: the digit's centre on the canvas along the path's axis (x, or y for top to bottom).
  QVector<double> x;
  for (const at::Tensor& c : canvases) {
    const Ink ink = ink_box(c);
    x << (along_y ? ink.top + ink.height / 2.0 : ink.left + ink.width / 2.0);
  }
  for (double v = kStudioCanvas / 2.0 - 36; v <= kStudioCanvas; v += 12) {
    auto* line = new QCPItemStraightLine(move_plot_);
    line->setPen(QPen(QColor(90, 90, 90), 1, v == kStudioCanvas / 2.0 ? Qt::DashLine : Qt::DotLine));
    line->point1->setCoords(v, 0);
    line->point2->setCoords(v, 1);
  }
  for (int s = 0; s < curves.size(); ++s) {
    QCPGraph* g = move_plot_->addGraph();
    g->setName(slot_title(work[s]));
    g->setPen(QPen(slot_colour(work[s].name), 2));
    g->setData(x, curves[s]);
  }
  showLegendBeneath(move_plot_);
  move_plot_->xAxis->setRange(0, kStudioCanvas);
  slide_path_ = canvases;
  move_plot_->replot();
  const QSignalBlocker block(scrub_);
  scrub_->setRange(0, int(canvases.size()) - 1);
  scrub_->setEnabled(true);
  Q_EMIT slid();
}

void RobustnessPanel::showCentredPair() {
  const QString relative = bundled_model("translution-static"), absolute = bundled_model("attention-static");
  if (relative.isEmpty() || absolute.isEmpty() || slots_.size() < 2) {
    note_->setText(tr("This build has no models trained on centred digits (scripts/train_pretrained.sh makes them)."));
    return;
  }
  if (!digits_->ready()) {
    note_->setText(tr("The MNIST test digits are not loaded: %1").arg(digits_->error()));
    return;
  }
  // A test digit moved one whole patch to the left of the centre: the relative model
  // still reads it, the absolute one does not; the slide then shows every position.
  const auto sample = digits_->sample(CanvasKind::Static, kDemoDigit);
  canvas_->setPixels(shifted_x(sample.pixels, -12));
  setKnownLabel(int(sample.label));
  path_->setCurrentIndex(0);
  ++busy_;
  auto pending = std::make_shared<int>(2);
  auto connections = std::make_shared<QList<QMetaObject::Connection>>();
  auto one_done = [this, pending, connections](bool ok, const QString& message) {
    if (!ok) note_->setText(tr("Cannot load a centred-trained model: %1").arg(message));
    if (--*pending > 0) return;
    for (const auto& c : *connections) disconnect(c);
    --busy_;
    slideAcross();
  };
  const QString sources[] = {relative, absolute};
  for (int i = 0; i < 2; ++i) {
    *connections << connect(slots_[i], &ModelSlot::loaded, this, [one_done] { one_done(true, {}); });
    *connections << connect(slots_[i], &ModelSlot::failed, this, [one_done](const QString& m) { one_done(false, m); });
  }
  for (int i = 0; i < 2; ++i) slots_[i]->load(sources[i], slots_[i]->device());
  if (protocol_->table()->rowOf(ProtocolBox::pairName("translution", true)) < 0) protocol_->evaluateBundledPairs();
  note_->setText(tr("Both models saw only centred digits in training. Relative position (Translution) depends on "
                    "offsets between patches, so a whole-patch shift (the dotted lines) changes few inputs; an "
                    "absolute position embedding ties every weight to a place."));
}

void RobustnessPanel::showSweep(const QString& title, const SweepResult& result, int patch, const QColor& colour) {
  bool replaced = false;
  for (TitledSweep& s : sweeps_)
    if (s.title == title) {
      s = TitledSweep{title, result, patch, colour};
      replaced = true;
    }
  if (!replaced) sweeps_ << TitledSweep{title, result, patch, colour};
  while (sweeps_.size() > 4) sweeps_.removeFirst();
  sweep_maps_->showSweeps(sweeps_);
}

void RobustnessPanel::runSweep() {
  const QList<SlotWork> work = loaded_slots(slots_);
  if (work.isEmpty()) return;
  SweepOptions options;
  options.digits = digits_spin_->value();
  options.stride = stride_->value();
  const std::string dir = data_dir_.toStdString();
  ++busy_;
  sweep_->setEnabled(false);
  progress_->setRange(0, 0);
  struct Out {
    QList<SweepResult> results;
    QString error;
  };
  QPointer<QProgressBar> bar = progress_;
  run_async<Out>(
      this,
      [work, options, dir, bar, cancel = cancel_] {
        Out out;
        try {
          const MnistDigits test = load_mnist(dir, Split::Test);
          out.results = sweep_slots(work, test, options, [bar, cancel](int64_t done, int64_t total) {
            if (*cancel) throw Error("cancelled: the window closed");  // ends the sweep between positions
            // Posted to the application, so the bar is looked up on the GUI thread, where it may be deleted.
            QMetaObject::invokeMethod(qApp, [bar, done, total] {
              if (!bar) return;
              bar->setRange(0, int(total));
              bar->setValue(int(done));
            });
          });
        } catch (const std::exception& e) {
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this, work](const Out& out) {
        --busy_;
        sweep_->setEnabled(true);
        progress_->setRange(0, 1);
        progress_->setValue(1);
        if (!out.error.isEmpty()) {
          note_->setText(tr("Sweep failed: %1").arg(out.error));
          return;
        }
        sweeps_.clear();
        for (int s = 0; s < out.results.size(); ++s)
          showSweep(short_title(work[s]), out.results[s], int(work[s].predictor->config().patch), slot_colour(work[s].name));
        note_->setText(tr("Each map: accuracy over the first %1 test digits with their centre at (x, y); dashed: the "
                          "model's patch grid. A centred digit sits at (42, 42). (S): trained on centred digits, (D): anywhere.")
                           .arg(digits_spin_->value()));
      });
}

}  // namespace translution::ui
