#include "robustness_panel.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <ATen/ATen.h>

#include "digit_canvas.h"
#include "model_slot.h"
#include "plot_export.h"
#include "train/evaluate.h"
#include "train/translation_sweep.h"

namespace translution::ui {
namespace {

const QColor kSlotColours[] = {QColor(230, 120, 30), QColor(31, 119, 180), QColor(44, 160, 44), QColor(148, 103, 189)};

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

template <typename T>
void run_async(QObject* owner, std::function<T()> work, std::function<void(const T&)> done) {
  auto* watcher = new QFutureWatcher<T>(owner);
  QObject::connect(watcher, &QFutureWatcher<T>::finished, owner, [watcher, done] {
    done(watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run(std::move(work)));
}

struct SlotWork {
  QString name;
  std::shared_ptr<const Predictor> predictor;
};

QList<SlotWork> loaded_slots(const QList<ModelSlot*>& slots) {
  QList<SlotWork> out;
  for (ModelSlot* s : slots)
    if (s->predictor()) out << SlotWork{s->name(), s->predictor()};
  return out;
}

}  // namespace

RobustnessPanel::RobustnessPanel(QString data_dir, const QList<ModelSlot*>& slots, DigitCanvas* canvas, QWidget* parent)
    : QWidget(parent), data_dir_(std::move(data_dir)), slots_(slots), canvas_(canvas) {
  auto* layout = new QVBoxLayout(this);

  auto* move_box = new QGroupBox(tr("Move the digit: probability of the true class along a path"), this);
  auto* move_controls = new QHBoxLayout;
  true_class_ = new QComboBox(this);
  for (int k = 0; k < 10; ++k) true_class_->addItem(QString::number(k), k);
  true_class_->setToolTip(tr("The digit's true class (set automatically for a random test digit)"));
  path_ = new QComboBox(this);
  path_->addItems({tr("left to right"), tr("top to bottom"), tr("corner to corner")});
  slide_ = new QPushButton(tr("Slide across"), this);
  slide_->setToolTip(tr("Place the current digit at every point of the path and plot each slot's probability"));
  scrub_ = new QSlider(Qt::Horizontal, this);
  scrub_->setEnabled(false);
  scrub_->setToolTip(tr("Put the digit at this point of the path on the canvas"));
  move_controls->addWidget(new QLabel(tr("True class"), this));
  move_controls->addWidget(true_class_);
  move_controls->addWidget(new QLabel(tr("Path"), this));
  move_controls->addWidget(path_);
  move_controls->addWidget(slide_);
  move_controls->addWidget(scrub_, 1);
  move_plot_ = new QCustomPlot(this);
  move_plot_->xAxis->setLabel(tr("position along the path (pixels)"));
  move_plot_->yAxis->setLabel(tr("P(true class)"));
  move_plot_->yAxis->setRange(0, 1);
  move_plot_->legend->setVisible(true);
  move_plot_->setMinimumHeight(150);
  enable_plot_export(move_plot_);
  auto* move_layout = new QVBoxLayout(move_box);
  move_layout->addLayout(move_controls);
  move_layout->addWidget(move_plot_, 1);
  layout->addWidget(move_box, 2);

  auto* sweep_box = new QGroupBox(tr("Translation sweep and protocol"), this);
  auto* sweep_controls = new QHBoxLayout;
  digits_ = new QSpinBox(this);
  digits_->setRange(1, 10000);
  digits_->setValue(50);
  digits_->setToolTip(tr("The first N test digits are placed at every position"));
  stride_ = new QSpinBox(this);
  stride_->setRange(1, 28);
  stride_->setValue(7);
  stride_->setToolTip(tr("Pixels between positions"));
  sweep_ = new QPushButton(tr("Run sweep"), this);
  protocol_samples_ = new QSpinBox(this);
  protocol_samples_->setRange(10, 10000);
  protocol_samples_->setValue(1000);
  protocol_samples_->setToolTip(tr("Test digits per test set"));
  protocol_ = new QPushButton(tr("Evaluate protocol"), this);
  progress_ = new QProgressBar(this);
  sweep_controls->addWidget(new QLabel(tr("Digits"), this));
  sweep_controls->addWidget(digits_);
  sweep_controls->addWidget(new QLabel(tr("Stride"), this));
  sweep_controls->addWidget(stride_);
  sweep_controls->addWidget(sweep_);
  sweep_controls->addSpacing(20);
  sweep_controls->addWidget(new QLabel(tr("Test digits"), this));
  sweep_controls->addWidget(protocol_samples_);
  sweep_controls->addWidget(protocol_);
  sweep_controls->addWidget(progress_, 1);
  sweep_plot_ = new QCustomPlot(this);
  sweep_plot_->setMinimumSize(240, 180);  // a width of 0 at the first layout would have it paint into an empty buffer
  enable_plot_export(sweep_plot_);
  sweep_plot_->plotLayout()->clear();
  table_ = new QTableWidget(0, 6, this);
  // Short headers so that all six columns fit beside the maps; the tooltips say what each test set is.
  table_->setHorizontalHeaderLabels({tr("slot"), tr("model"), tr("trained on"), tr("static"), tr("dynamic"), tr("moving")});
  const QString test_tips[] = {tr("Accuracy on test digits centred on the canvas"),
                               tr("Accuracy on test digits at a random position inside the canvas"),
                               tr("Accuracy on frames of test digits bouncing across the canvas (Moving MNIST)")};
  for (int c = 0; c < 3; ++c) table_->horizontalHeaderItem(3 + c)->setToolTip(test_tips[c]);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setMaximumHeight(120);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  auto* sweep_layout = new QVBoxLayout(sweep_box);
  sweep_layout->addLayout(sweep_controls);
  auto* results = new QHBoxLayout;
  results->addWidget(sweep_plot_, 3);
  auto* right = new QVBoxLayout;
  right->addWidget(table_);
  right->addWidget(note_);
  right->addStretch(1);
  results->addLayout(right, 2);
  sweep_layout->addLayout(results, 1);
  layout->addWidget(sweep_box, 3);

  connect(slide_, &QPushButton::clicked, this, &RobustnessPanel::slideAcross);
  connect(scrub_, &QSlider::valueChanged, this, &RobustnessPanel::placeOnPath);
  connect(sweep_, &QPushButton::clicked, this, &RobustnessPanel::runSweep);
  connect(protocol_, &QPushButton::clicked, this, &RobustnessPanel::runProtocol);
}

void RobustnessPanel::setTrueClass(int label) { true_class_->setCurrentIndex(std::clamp(label, 0, 9)); }

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
  ++busy_;
  slide_->setEnabled(false);
  run_async<QList<QVector<double>>>(
      this,
      [work, canvases, label] {
        QList<QVector<double>> curves;
        for (const SlotWork& s : work) {
          QVector<double> p;
          for (const at::Tensor& c : canvases) p << s.predictor->predict(c, false).probabilities[size_t(label)];
          curves << p;
        }
        return curves;
      },
      [this, work, canvases](const QList<QVector<double>>& curves) {
        --busy_;
        slide_->setEnabled(true);
        move_plot_->clearGraphs();
        const int steps = int(canvases.size());
        QVector<double> x;
        for (int i = 0; i < steps; ++i) x << 2.0 * i;
        for (int s = 0; s < curves.size(); ++s) {
          QCPGraph* g = move_plot_->addGraph();
          g->setName(tr("slot %1: %2").arg(work[s].name, QString::fromStdString(work[s].predictor->config().model)));
          g->setPen(QPen(kSlotColours[s % 4], 2));
          g->setData(x, curves[s]);
        }
        move_plot_->xAxis->setRange(0, 2.0 * (steps - 1));
        slide_path_ = canvases;
        move_plot_->replot();
        scrub_->setRange(0, steps - 1);
        scrub_->setEnabled(true);
      });
}

void RobustnessPanel::placeOnPath(int position) {
  if (position >= 0 && position < slide_path_.size()) canvas_->setPixels(slide_path_[position]);
}

bool RobustnessPanel::finishTask(QPushButton* button, const QString& failure, const QString& error) {
  --busy_;
  button->setEnabled(true);
  progress_->setRange(0, 1);
  progress_->setValue(1);
  if (error.isEmpty()) return true;
  note_->setText(failure + ": " + error);
  return false;
}

void RobustnessPanel::runSweep() {
  const QList<SlotWork> work = loaded_slots(slots_);
  if (work.isEmpty()) return;
  SweepOptions options;
  options.digits = digits_->value();
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
      [work, options, dir, bar] {
        Out out;
        try {
          const MnistDigits test = load_mnist(dir, Split::Test);
          for (int i = 0; i < work.size(); ++i)
            out.results << translation_sweep(work[i].predictor->model(), test, options, work[i].predictor->device(),
                                             [bar, i, n = work.size()](int64_t done, int64_t total) {
                                               QMetaObject::invokeMethod(bar, [bar, i, n, done, total] {
                                                 if (!bar) return;
                                                 bar->setRange(0, int(total * n));
                                                 bar->setValue(int(i * total + done));
                                               });
                                             });
        } catch (const std::exception& e) {
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this, work](const Out& out) {
        if (!finishTask(sweep_, tr("Sweep failed"), out.error)) return;
        sweep_plot_->plotLayout()->clear();
        sweep_plot_->clearPlottables();
        auto* scale = new QCPColorScale(sweep_plot_);
        scale->setGradient(QCPColorGradient::gpThermal);
        scale->setDataRange(QCPRange(0, 1));
        scale->axis()->setLabel(tr("accuracy"));
        for (int s = 0; s < out.results.size(); ++s) {
          const SweepResult& r = out.results[s];
          auto* rect = new QCPAxisRect(sweep_plot_);
          sweep_plot_->plotLayout()->addElement(0, s, rect);
          rect->axis(QCPAxis::atLeft)->setRangeReversed(true);
          rect->axis(QCPAxis::atBottom)->setLabel(tr("slot %1 %2: mean %3%")
                                                      .arg(work[s].name, QString::fromStdString(work[s].predictor->config().model))
                                                      .arg(100 * r.mean_accuracy(), 0, 'f', 1));
          auto* map = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
          const int p = int(r.positions.size());
          map->data()->setSize(p, p);
          map->data()->setRange(QCPRange(double(r.positions.front()), double(r.positions.back())),
                                QCPRange(double(r.positions.front()), double(r.positions.back())));
          for (int y = 0; y < p; ++y)
            for (int x = 0; x < p; ++x) map->data()->setCell(x, y, r.accuracy[y][x].item<double>());
          map->setInterpolate(false);
          map->setColorScale(scale);
          map->rescaleAxes();
        }
        sweep_plot_->plotLayout()->addElement(0, int(out.results.size()), scale);
        sweep_plot_->replot();
        note_->setText(tr("Each map: accuracy over the first %1 test digits with their top-left corner at (x, y).")
                           .arg(digits_->value()));
      });
}

void RobustnessPanel::runProtocol() {
  const QList<SlotWork> work = loaded_slots(slots_);
  if (work.isEmpty()) return;
  const std::string dir = data_dir_.toStdString();
  const int64_t samples = protocol_samples_->value();
  ++busy_;
  protocol_->setEnabled(false);
  progress_->setRange(0, 0);
  struct Out {
    QList<QVector<double>> accuracy;  // per slot: static, dynamic, moving
    QString error;
  };
  run_async<Out>(
      this,
      [work, dir, samples] {
        Out out;
        try {
          for (const SlotWork& s : work) {
            QVector<double> row;
            for (const char* kind : {"static", "dynamic", "moving"}) {
              CanvasDataset test = dataset_for_model(s.predictor->config(), kind, Split::Test, dir);
              row << evaluate(s.predictor->model(), test, samples, 256, s.predictor->device()).accuracy;
            }
            out.accuracy << row;
          }
        } catch (const std::exception& e) {
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this, work](const Out& out) {
        if (!finishTask(protocol_, tr("Evaluation failed"), out.error)) return;
        table_->setRowCount(int(out.accuracy.size()));
        for (int s = 0; s < out.accuracy.size(); ++s) {
          const auto& meta = work[s].predictor->metadata();
          const QString trained = meta.count("dataset") ? QString::fromStdString(meta.at("dataset")) : tr("unknown");
          const QStringList cells = {work[s].name, QString::fromStdString(work[s].predictor->config().model), trained,
                                     QString::number(100 * out.accuracy[s][0], 'f', 1) + "%",
                                     QString::number(100 * out.accuracy[s][1], 'f', 1) + "%",
                                     QString::number(100 * out.accuracy[s][2], 'f', 1) + "%"};
          for (int c = 0; c < cells.size(); ++c) table_->setItem(s, c, new QTableWidgetItem(cells[c]));
        }
        note_->setText(tr("A model trained on static and tested on dynamic is the papers' Static->Dynamic column; "
                          "trained and tested on the same set, Static->Static or Dynamic->Dynamic."));
      });
}

}  // namespace translution::ui
