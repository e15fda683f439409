#include "offset_panel.h"

#include <cmath>

#include <QComboBox>
#include <QFutureWatcher>
#include <QtConcurrent>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>

#include <ATen/ATen.h>

#include "model_slot.h"
#include "plot_export.h"
#include "square_cells.h"

namespace translution::ui {
namespace {

QString kind_of(const std::string& model) {
  const bool baseline = model.rfind("attention", 0) == 0 || model == "rope" || model == "gpsa" || model.rfind("rel-", 0) == 0;
  return baseline ? QObject::tr("a baseline") : QObject::tr("an absolute pair encoding");
}

}  // namespace

OffsetPanel::OffsetPanel(const QList<ModelSlot*>& slots, QWidget* parent)
    : QWidget(parent),
      slot_box_(new QComboBox(this)),
      what_(new QComboBox(this)),
      message_(new QLabel(this)),
      plot_(new QCustomPlot(this)) {
  what_->addItems({tr("learned weights |W_δ|"), tr("contributions on this canvas")});
  what_->setToolTip(tr("The matrices themselves, or what each offset's value matrix carried for the digit on the "
                       "canvas (attention-weighted norms of W_v[δ] x_j), updated with every change"));
  what_->setObjectName("offsetView");
  slot_box_->setObjectName("offsetSlot");
  connect(what_, &QComboBox::currentIndexChanged, this, &OffsetPanel::rebuild);
  slot_box_->setToolTip(tr("Whose offset weights to show"));
  message_->setWordWrap(true);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Model"), this));
  controls->addWidget(slot_box_);
  controls->addWidget(what_);
  controls->addWidget(message_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(plot_, 1);
  plot_->setMouseTracking(true);
  plot_->installEventFilter(this);
  enable_plot_export(plot_);
  connect(slot_box_, &QComboBox::currentIndexChanged, this, &OffsetPanel::rebuild);
  connect(plot_, &QCustomPlot::mouseMove, this, &OffsetPanel::showHover);
  setSlots(slots);
}

void OffsetPanel::setSlots(const QList<ModelSlot*>& slots) {
  ModelSlot* shown = slot_box_->currentIndex() >= 0 ? slots_.value(slot_box_->currentIndex()) : nullptr;
  for (ModelSlot* s : slots_)
    if (slots.contains(s)) disconnect(s, nullptr, this, nullptr);
  slots_ = slots;
  const QSignalBlocker block(slot_box_);
  slot_box_->clear();
  for (ModelSlot* s : slots_) {
    slot_box_->addItem(tr("Slot %1").arg(s->name()));
    connect(s, &ModelSlot::loaded, this, &OffsetPanel::rebuild);
    connect(s, &ModelSlot::predicted, this, [this, s] {
      if (showingContributions() && slots_.value(slot_box_->currentIndex()) == s) rebuild();
    });
  }
  slot_box_->setCurrentIndex(std::max<int>(0, int(slots_.indexOf(shown))));
  rebuild();
}

QString OffsetPanel::message() const { return message_->text(); }

void OffsetPanel::rebuild() {
  ModelSlot* slot = slot_box_->currentIndex() >= 0 ? slots_.value(slot_box_->currentIndex()) : nullptr;
  const auto predictor = slot ? slot->predictor() : nullptr;
  const int generation = ++generation_;
  if (!predictor || !showingContributions()) {
    draw(predictor ? predictor->offset_magnitudes() : std::vector<std::vector<OffsetMagnitudes>>{}, predictor.get());
    return;
  }
  const auto& prediction = slot->lastPrediction();
  if (!prediction) {
    draw({}, predictor.get());
    return;
  }
  // From the prediction's own attention and inputs, off the GUI thread; the newest request wins.
  ++busy_;
  auto* watcher = new QFutureWatcher<std::vector<std::vector<OffsetMagnitudes>>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, predictor] {
    --busy_;
    watcher->deleteLater();
    if (generation == generation_) draw(watcher->result(), predictor.get());
  });
  watcher->setFuture(QtConcurrent::run([predictor, prediction = *prediction] {
    try {
      return predictor->value_contributions(prediction);
    } catch (const std::exception&) {
      return std::vector<std::vector<OffsetMagnitudes>>{};
    }
  }));
}

bool OffsetPanel::showingContributions() const { return what_->currentIndex() == 1; }

void OffsetPanel::draw(const std::vector<std::vector<OffsetMagnitudes>>& magnitudes, const Predictor* predictor) {
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  maps_.clear();
  grids_.clear();
  map_layers_.clear();
  if (!predictor) {
    message_->setText(tr("This slot has no model."));
    plot_->replot();
    return;
  }
  const ViTConfig& c = predictor->config();
  const TokenLayout layout = c.token_layout();  // a sequence's offsets: a strip of one row
  grid_h_ = int(layout.height);
  grid_w_ = int(layout.width);
  std::vector<std::vector<OffsetGrid>> layers;
  for (const auto& layer : magnitudes) layers.push_back(offset_grids(layer, layout));
  size_t projections = 0;
  for (const auto& l : layers) projections = std::max(projections, l.size());
  if (projections == 0) {
    const QString offsets = grid_h_ == 1 ? tr("1-D offset δ = i − j of the patches read row by row")
                                       : tr("offset δ = (dy, dx), query patch minus key patch");
  message_->setText(showingContributions() && predictor->offset_magnitudes().size() > 0 &&
                              !predictor->offset_magnitudes().front().empty()
                          ? tr("%1 has no offset-indexed value matrices, so no offset carries values of its own.")
                                .arg(QString::fromStdString(c.model))
                          : tr("%1 has no per-offset weights: it is %2, which uses no offset-indexed matrices. "
                               "Load a Translution-family model (translution, lor, translution-qk, ...) to see them.")
                                .arg(QString::fromStdString(c.model), kind_of(c.model)));
    plot_->replot();
    return;
  }
  const QString offsets = grid_h_ == 1 ? tr("1-D offset δ = i − j of the patches read row by row")
                                       : tr("offset δ = (dy, dx), query patch minus key patch");
  message_->setText(showingContributions()
                        ? tr("%1, this canvas: for each %2, Σ α_ij |W_v[δ] x_j| over the pairs at that offset, "
                             "summed over heads: where the values the digit sends come from. Offset 0 outlined; the "
                             "row beneath: CLS to itself, into CLS, out of CLS.")
                              .arg(QString::fromStdString(c.model), offsets)
                        : tr("%1: |W_δ| (Frobenius norm) per %2; offset 0 outlined; the row beneath each map is CLS "
                             "to itself, into CLS, out of CLS. Shared colour scale; hover for values.")
                              .arg(QString::fromStdString(c.model), offsets));
  auto* scale = new QCPColorScale(plot_);
  scale->setGradient(QCPColorGradient::gpThermal);
  QCPColorGradient gradient(QCPColorGradient::gpThermal);
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  scale->setGradient(gradient);
  scale->axis()->setLabel(showingContributions() ? tr("Σ α |W_v[δ] x|") : tr("|W_δ|"));
  double low = 1e30, high = 0;
  const bool strips = grid_h_ == 1;  // a sequence's offsets: one wide strip per map, stacked in one column
  for (size_t l = 0; l < layers.size(); ++l) {
    for (size_t p = 0; p < layers[l].size(); ++p) {
      const OffsetGrid& g = layers[l][p];
      auto* rect = new QCPAxisRect(plot_);
      if (strips) plot_->plotLayout()->addElement(int(l * projections + p), 0, rect);
      else plot_->plotLayout()->addElement(int(l), int(p), rect);
      maps_ << addMap(rect, g, tr("layer %1, W%2").arg(l + 1).arg(QString::fromStdString(g.projection)), scale, low, high);
      grids_.push_back(g);
      map_layers_ << int(l);
    }
  }
  plot_->plotLayout()->addElement(0, strips ? 1 : int(projections), scale);
  scale->setDataRange(QCPRange(low, high > low ? high : low + 1));
  plot_->setMinimumHeight(strips ? int(layers.size() * projections) * 110 : int(layers.size()) * 190);
  plot_->replot();
  squareUp();  // square cells need the rects' laid-out sizes
}

void OffsetPanel::squareUp() {
  if (grid_h_ == 1) return;  // a sequence's strips fill their rects instead
  const QCPRange x(-grid_w_ + 0.5, grid_w_ - 0.5), y(-grid_h_ + 0.5, grid_h_ + 1.5);
  for (QCPColorMap* m : maps_) square_cells(m->keyAxis(), m->valueAxis(), x, y);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

// The plot lays itself out in its own resize handler, after this filter: square the cells once it has.
bool OffsetPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && event->type() == QEvent::Resize && !maps_.isEmpty())
    QMetaObject::invokeMethod(this, &OffsetPanel::squareUp, Qt::QueuedConnection);
  return QWidget::eventFilter(watched, event);
}

// One offset grid in offset coordinates: dx across, dy down, the (0, 0) offset
// outlined, and the three CLS matrices in a row two cells beneath the grid.
QCPColorMap* OffsetPanel::addMap(QCPAxisRect* rect, const OffsetGrid& g, const QString& title, QCPColorScale* scale,
                                 double& low, double& high) {
  const int rows = 2 * grid_h_ - 1 + 2, cols = 2 * grid_w_ - 1;  // + a gap row + the CLS row
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  QCPAxis* top = rect->axis(QCPAxis::atTop);
  y->setRangeReversed(true);
  x->setLabel(grid_h_ == 1 ? tr("δ = i − j (patches row by row)") : tr("dx"));
  y->setLabel(grid_h_ == 1 ? QString() : tr("dy"));
  y->setTickLabels(grid_h_ > 1);
  integer_ticks(x, grid_w_ > 4 ? 3 : 1);
  integer_ticks(y, grid_h_ > 4 ? 3 : 1);
  top->setVisible(true);
  top->setTicks(false);
  top->setTickLabels(false);
  top->setLabel(title);
  auto* map = new QCPColorMap(x, y);
  map->data()->setSize(cols, rows);
  map->data()->setRange(QCPRange(-(grid_w_ - 1), grid_w_ - 1), QCPRange(-(grid_h_ - 1), grid_h_ + 1));
  const at::Tensor grid = g.grid.contiguous();
  for (int r = 0; r < rows; ++r)
    for (int col = 0; col < cols; ++col) map->data()->setCell(col, r, std::nan(""));
  for (int r = 0; r < 2 * grid_h_ - 1; ++r)
    for (int col = 0; col < cols; ++col) {
      const double v = grid[r][col].item<double>();
      map->data()->setCell(col, r, v);
      low = std::min(low, v), high = std::max(high, v);
    }
  const float cls[3] = {g.cls_self, g.cls_in, g.cls_out};
  for (int k = 0; k < 3 && k < cols; ++k) {
    map->data()->setCell(k, rows - 1, cls[k]);
    low = std::min<double>(low, cls[k]), high = std::max<double>(high, cls[k]);
  }
  map->setInterpolate(false);
  map->setColorScale(scale);
  x->setRange(-grid_w_ + 0.5, grid_w_ - 0.5);
  y->setRange(-grid_h_ + 0.5, grid_h_ + 1.5);
  auto* origin = new QCPItemRect(plot_);
  origin->setClipAxisRect(rect);
  for (QCPItemPosition* corner : {origin->topLeft, origin->bottomRight}) {
    corner->setAxes(x, y);
    corner->setAxisRect(rect);
  }
  origin->topLeft->setCoords(-0.5, -0.5);
  origin->bottomRight->setCoords(0.5, 0.5);
  origin->setPen(QPen(QColor(40, 200, 255), 2));
  origin->setBrush(Qt::NoBrush);
  return map;
}

QString OffsetPanel::describeCell(int index, int row, int column) const {
  if (index < 0 || index >= maps_.size()) return {};
  const OffsetGrid& g = grids_[size_t(index)];
  const QString where = tr("layer %1, W%2").arg(map_layers_[index] + 1).arg(QString::fromStdString(g.projection));
  if (row < 2 * grid_h_ - 1 && column < 2 * grid_w_ - 1 && row >= 0 && column >= 0) {
    const int dy = row - (grid_h_ - 1), dx = column - (grid_w_ - 1);
    const double v = g.grid[row][column].item<double>();
    if (std::isnan(v)) return tr("%1: no matrix at this offset (a causal sequence looks back only)").arg(where);
    if (grid_h_ == 1) return tr("%1, offset δ = %2: |W| = %3").arg(where).arg(dx).arg(v, 0, 'g', 4);
    return tr("%1, offset (dx %2, dy %3): |W| = %4").arg(where).arg(dx).arg(dy).arg(v, 0, 'g', 4);
  }
  if (row == 2 * grid_h_ && column >= 0 && column < 3) {
    const char* names[3] = {"CLS to itself", "into CLS", "out of CLS"};
    const float values[3] = {g.cls_self, g.cls_in, g.cls_out};
    return tr("%1, %2: |W| = %3").arg(where, tr(names[column])).arg(values[column], 0, 'g', 4);
  }
  return {};
}

void OffsetPanel::showHover(QMouseEvent* event) {
  for (int i = 0; i < maps_.size(); ++i) {
    QCPAxisRect* rect = maps_[i]->keyAxis()->axisRect();
    if (!rect->rect().contains(event->pos())) continue;
    const int column = int(std::lround(maps_[i]->keyAxis()->pixelToCoord(event->pos().x()))) + grid_w_ - 1;
    const int row = int(std::lround(maps_[i]->valueAxis()->pixelToCoord(event->pos().y()))) + grid_h_ - 1;
    const QString text = describeCell(i, row, column);
    if (!text.isEmpty()) QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
    return;
  }
  QToolTip::hideText();
}

}  // namespace translution::ui
