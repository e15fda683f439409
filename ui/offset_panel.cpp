#include "offset_panel.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <QAbstractScrollArea>
#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollBar>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent>

#include "knockout_bar.h"
#include "method_titles.h"
#include "model_slot.h"
#include "plot_export.h"
#include "slot_box.h"
#include "slot_knockout.h"
#include "square_cells.h"

namespace translution::ui {
namespace {

// dy ticks every `step` over a grid of `grid_h` rows of patches (none for one row: a 1-D
// layout has no dy), and "CLS" at the CLS matrices' row, two cells beneath the grid.
QSharedPointer<QCPAxisTickerText> offset_ticks_and_cls(int grid_h, int step) {
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  const int last = grid_h - 1, first = -(last / step) * step;
  for (int dy = first; grid_h > 1 && dy <= last; dy += step) ticker->addTick(dy, QString::number(dy));
  ticker->addTick(grid_h + 1, QObject::tr("CLS"));
  return ticker;
}

QString kind_of(const std::string& model) {
  const bool baseline =
      model.rfind("attention", 0) == 0 || model == "rope" || model == "gpsa" || model.rfind("rel-", 0) == 0;
  return baseline ? QObject::tr("a baseline") : QObject::tr("an absolute pair encoding");
}

// Room a map needs around its data area: its dy axis beside it; its title and dx axis above and below.
constexpr int kMapMarginWidth = 60, kMapMarginHeight = 70;
constexpr int kScaleWidth = 90;      // the colour scale down the right, with its labels
constexpr int kLeastMapWidth = 100;  // a map's data area narrower than this: fewer maps a row
// The rows' data area at least this tall, whatever the maps need: the colour scale beside the
// first row takes that row's height, and keeps a bar long enough for its labels.
constexpr int kLeastDataHeight = 120;
constexpr int kStripRowHeight = 110;  // a sequence's 1-D strip, three cells tall

}  // namespace

QCPRange quantile_range(std::vector<double> values, double low, double high) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
               values.end());
  if (values.empty()) return QCPRange(0, 1);
  std::sort(values.begin(), values.end());
  auto quantile = [&values](double q) {
    const double at = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
    const size_t below = size_t(std::floor(at)), above = std::min(values.size() - 1, below + 1);
    return values[below] + (at - double(below)) * (values[above] - values[below]);
  };
  const double lower = quantile(low), upper = quantile(high);
  return QCPRange(lower, upper > lower ? upper : lower + std::max(1e-12, std::abs(lower) * 1e-6));
}

OffsetPanel::OffsetPanel(const QList<ModelSlot*>& slots, QWidget* parent)
    : QWidget(parent),
      slot_box_(new SlotBox(this)),
      what_(new QComboBox(this)),
      message_(new QLabel(this)),
      plot_(new QCustomPlot(this)),
      knockout_bar_(new KnockoutBar(this)),
      knockout_(new SlotKnockout(this)) {
  what_->addItems({tr("learned weights |W[δ]|"), tr("contributions on this canvas")});
  what_->setToolTip(
      tr("The matrices themselves, or what each offset's value matrix carried for the digit on the "
         "canvas (attention-weighted norms of Wᵥ[δ] xⱼ), updated with every change"));
  what_->setObjectName("offsetView");
  slot_box_->setObjectName("offsetSlot");
  slot_box_->setToolTip(tr("Whose offset weights to show"));
  message_->setObjectName("offsetMessage");
  message_->setWordWrap(true);
  message_->setTextFormat(Qt::RichText);  // subscripts in the formulas
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Model"), this));
  controls->addWidget(slot_box_);
  controls->addWidget(what_);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(knockout_bar_);
  layout->addWidget(message_);  // a line of its own: it wraps instead of widening the controls
  layout->addWidget(plot_, 1);
  setTabOrder(slot_box_, what_);
  plot_->setMouseTracking(true);
  plot_->installEventFilter(this);  // its height follows its width
  enable_plot_export(plot_);
  // Square cells with the axes over exactly the offsets: each map's rect gives up
  // the width or height it has to spare, every time the plot lays itself out.
  connect(plot_, &QCustomPlot::afterLayout, this, [this] {
    if (grid_h_ > 1)
      for (QCPColorMap* m : maps_) fit_square_cells(m->keyAxis()->axisRect());
  });
  connect(what_, &QComboBox::currentIndexChanged, this, &OffsetPanel::rebuild);
  connect(slot_box_, &QComboBox::currentIndexChanged, this, &OffsetPanel::rebuild);
  connect(plot_, &QCustomPlot::mouseMove, this, &OffsetPanel::showHover);
  connect(plot_, &QCustomPlot::mousePress, this, &OffsetPanel::pressCell);
  connect(plot_, &QCustomPlot::mouseRelease, this, &OffsetPanel::releaseCell);
  connect(knockout_bar_, &KnockoutBar::selectionChanged, this, [this] {
    drawSelection();
    plot_->replot();
  });
  connect(knockout_bar_, &KnockoutBar::applyRequested, this, &OffsetPanel::applyKnockout);
  connect(knockout_bar_, &KnockoutBar::restoreRequested, this, [this] {
    if (ModelSlot* slot = shownSlot()) knockout_->restore(slot);
  });
  connect(knockout_, &SlotKnockout::applied, this, [this] { showKnockoutState(); });
  connect(knockout_, &SlotKnockout::workDone, this, [this] { knockout_bar_->setWorking(knockout_->busy()); });
  connect(knockout_, &SlotKnockout::restored, this, [this] { showKnockoutState(); });
  connect(knockout_, &SlotKnockout::failed, this, [this](ModelSlot* slot, const QString& why) {
    knockout_bar_->setStatus(tr("Slot %1 was not knocked out: %2").arg(slot->name(), why));
  });
  setSlots(slots);
}

void OffsetPanel::setSlots(const QList<ModelSlot*>& slots) {
  for (ModelSlot* s : slot_box_->slots())
    if (slots.contains(s)) disconnect(s, nullptr, this, nullptr);
  slot_box_->setSlots(slots);
  for (ModelSlot* s : slots) {
    connect(s, &ModelSlot::loaded, this, &OffsetPanel::rebuild);
    connect(s, &ModelSlot::predicted, this, [this, s] {
      if (showingContributions() && shownSlot() == s) rebuild();
    });
  }
  rebuild();
}

QString OffsetPanel::message() const { return message_->text(); }

ModelSlot* OffsetPanel::shownSlot() const { return slot_box_->shown(); }

bool OffsetPanel::busy() const { return busy_ > 0 || knockout_->busy(); }

void OffsetPanel::rebuild() {
  ModelSlot* slot = shownSlot();
  const auto predictor = slot ? slot->predictor() : nullptr;
  const int generation = ++generation_;
  if (predictor) {
    const auto& layers = predictor->offset_magnitudes();
    const bool banks = std::any_of(layers.begin(), layers.end(), [](const auto& l) { return !l.empty(); });
    knockout_bar_->setModel(predictor->config().token_layout(), banks);
  } else {
    knockout_bar_->setModel(TokenLayout{}, false);
  }
  showKnockoutState();
  if (!predictor || !showingContributions()) {
    draw(predictor ? predictor->offset_magnitudes() : std::vector<std::vector<OffsetMagnitudes>>{},
         predictor.get());
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

void OffsetPanel::clearPlot() {
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  scale_ = nullptr;
  echoes_.clear();  // deleted with the layout's other elements
  maps_.clear();
  grids_.clear();
  map_layers_.clear();
  marks_.clear();              // clearItems() deleted them
  plot_->setMinimumHeight(0);  // nothing to show needs no room
}

void OffsetPanel::draw(const std::vector<std::vector<OffsetMagnitudes>>& magnitudes,
                       const Predictor* predictor) {
  clearPlot();
  if (!predictor) {
    message_->setText(tr("This slot has no model."));
    plot_->replot();
    return;
  }
  const TokenLayout layout = predictor->config().token_layout();  // a sequence's offsets: a strip of one row
  grid_h_ = int(layout.height);
  grid_w_ = int(layout.width);
  std::vector<std::vector<OffsetGrid>> layers;
  size_t projections = 0, count = 0;
  for (const auto& layer : magnitudes) {
    layers.push_back(offset_grids(layer, layout));
    projections = std::max(projections, layers.back().size());
    count += layers.back().size();
  }
  explain(*predictor, projections > 0);
  if (projections == 0) {
    plot_->replot();
    return;
  }
  auto* grid = plot_->plotLayout();
  const bool strips = grid_h_ == 1;  // a sequence's offsets: one wide strip per map, stacked in one column
  // One column per projection; a single projection per layer (the values) wraps its layers into rows of
  // three; fewer where the maps would be too narrow to read (columnsFor).
  natural_columns_ = strips ? 1 : projections > 1 ? int(projections) : int(std::min<size_t>(count, 3));
  layer_rows_ = !strips && projections > 1;
  columns_ = columnsFor(plotWidthWithoutScrollBar());
  std::vector<double> values;
  for (size_t l = 0; l < layers.size(); ++l)
    for (const OffsetGrid& g : layers[l]) {
      auto* rect = new QCPAxisRect(plot_);
      const int k = int(maps_.size());
      grid->addElement(k / columns_, k % columns_, rect);
      maps_ << addMap(rect, g, tr("layer %1, W%2").arg(l + 1).arg(QString::fromStdString(g.projection)),
                      values);
      grids_.push_back(g);
      map_layers_ << int(l);
    }
  // Weights: the slot's own model's norms, which the maps show unless a knocked-out copy stands in.
  const std::shared_ptr<const Predictor> own =
      showingContributions() ? nullptr : knockout_->original(shownSlot());
  addScale(own ? scaleNorms(*own) : values);
  if (own) blankBelowScale();
  placeScales();
  sizePlot();
  drawSelection();
  plot_->replot();
}

// The plot's width as it would be without a vertical scroll bar beside the panel.
// Its height follows this width, which is the same whether or not that scroll bar
// shows: a height that made the bar appear and so narrowed the plot would otherwise
// set off a smaller height, the bar's going, a wider plot, and so on.
int OffsetPanel::plotWidthWithoutScrollBar() const {
  int width = plot_->width();
  for (const QWidget* p = parentWidget(); p; p = p->parentWidget())
    if (const auto* area = qobject_cast<const QAbstractScrollArea*>(p)) {
      if (area->verticalScrollBar()->isVisible()) width += area->verticalScrollBar()->width();
      break;
    }
  return width;
}

// The maps a row at `width`: as many as keep each map's data area readable. Where a
// row is a layer's projections, they stay side by side or each map takes a row of
// its own; layers three a row go to two, then one.
int OffsetPanel::columnsFor(int width) const {
  const auto data_width = [width](int columns) { return (width - kScaleWidth) / columns - kMapMarginWidth; };
  if (data_width(natural_columns_) >= kLeastMapWidth) return natural_columns_;
  if (!layer_rows_)
    for (int c = natural_columns_ - 1; c > 1; --c)
      if (data_width(c) >= kLeastMapWidth) return c;
  return 1;
}

// Map k in row k / columns, column k % columns, as draw placed them; then the colour scales.
void OffsetPanel::placeMaps() {
  QCPLayoutGrid* grid = plot_->plotLayout();
  for (QCPColorMap* m : maps_) grid->take(m->keyAxis()->axisRect());
  grid->take(scale_);
  for (QCPColorScale* echo : echoes_) grid->remove(echo);  // removed and deleted
  echoes_.clear();
  grid->simplify();
  for (int k = 0; k < maps_.size(); ++k)
    grid->addElement(k / columns_, k % columns_, maps_[k]->keyAxis()->axisRect());
  placeScales();
}

// The colour scale beside the first row of maps, where the panel opens, and a copy of it
// beside every further row: a deep model's maps scroll, and a row whose scale has scrolled
// out of view cannot be read. A sequence's strips are too thin for a bar of their own.
void OffsetPanel::placeScales() {
  QCPLayoutGrid* grid = plot_->plotLayout();
  grid->addElement(0, columns_, scale_);
  const int rows = (int(maps_.size()) + columns_ - 1) / columns_;
  for (int r = 1; r < rows && grid_h_ > 1; ++r) {
    auto* echo = new QCPColorScale(plot_);
    echo->setGradient(scale_->gradient());
    echo->setDataRange(scale_->dataRange());
    echo->setLabel(scale_->label());
    echo->setRangeDrag(false);
    echo->setRangeZoom(false);
    grid->addElement(r, columns_, echo);
    echoes_ << echo;
  }
}

// The plot's height follows its width: rows tall enough for square cells across
// a whole column, the data area between kLeastDataHeight and 320 px tall. The panel scrolls.
void OffsetPanel::sizePlot() {
  if (maps_.isEmpty()) return plot_->setMinimumHeight(0);
  if (const int fit = columnsFor(plotWidthWithoutScrollBar()); fit != columns_) {
    columns_ = fit;
    placeMaps();
    plot_->replot();
  }
  const int rows = (int(maps_.size()) + columns_ - 1) / columns_;
  if (grid_h_ == 1) return plot_->setMinimumHeight(rows * kStripRowHeight);
  const double aspect =
      double(2 * grid_h_ + 1) / double(2 * grid_w_ - 1);  // the data area's height over its width
  const int column = (plotWidthWithoutScrollBar() - kScaleWidth) / columns_ - kMapMarginWidth;
  const int data_height = std::clamp(int(column * aspect), kLeastDataHeight, 320);
  plot_->setMinimumHeight(rows * (data_height + kMapMarginHeight));
}

bool OffsetPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && event->type() == QEvent::Resize &&
      static_cast<QResizeEvent*>(event)->size().width() !=
          static_cast<QResizeEvent*>(event)->oldSize().width())
    QMetaObject::invokeMethod(this, &OffsetPanel::sizePlot,
                              Qt::QueuedConnection);  // after the layout settles
  return QWidget::eventFilter(watched, event);
}

std::vector<double> OffsetPanel::scaleNorms(const Predictor& model) const {
  const TokenLayout layout = model.config().token_layout();
  std::vector<double> norms;
  for (const auto& layer : model.offset_magnitudes())
    for (const OffsetGrid& g : offset_grids(layer, layout)) {
      const at::Tensor finite = g.grid.masked_select(g.grid.isfinite()).to(at::kDouble).contiguous();
      norms.insert(norms.end(), finite.data_ptr<double>(), finite.data_ptr<double>() + finite.numel());
      const float cls[3] = {g.cls_self, g.cls_in, g.cls_out};  // the row beneath, as addMap draws it
      for (int64_t k = 0; k < 3 && k < g.grid.size(1); ++k) norms.push_back(cls[k]);
    }
  return norms;
}

// One colour scale for every map. The weights' norms span a modest range, so
// they use all of it. The contributions do not: the self offset (0, 0) and the
// CLS pairs carry far more than the rest, and a min..max range leaves every other
// cell dark. Contributions are sums of norms, never negative, so the range runs
// from their 1st to their 99th percentile (not symmetric around 0); the few cells
// above it show the brightest colour, and hovering gives their values.
void OffsetPanel::addScale(const std::vector<double>& values) {
  scale_ = new QCPColorScale(plot_);
  QCPColorGradient gradient(QCPColorGradient::gpThermal);
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  scale_->setGradient(gradient);
  scale_->setRangeDrag(false);
  scale_->setRangeZoom(false);
  scale_->setLabel(showingContributions() ? tr("value carried Σ α |Wᵥ[δ] x| (1st–99th percentile)")
                                          : tr("|W[δ]| (Frobenius norm)"));
  for (QCPColorMap* m : maps_) m->setColorScale(scale_);
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  scale_->setDataRange(showingContributions() ? quantile_range(values, 0.01, 0.99)
                       : values.empty()       ? QCPRange(0, 1)
                                              : QCPRange(*low, *high > *low ? *high : *low + 1));
}

// With a knocked-out copy standing in, the scale is the slot's own model's. A replaced matrix
// below it (zero, or a bank's mean smaller than every offset's own) is left blank under its
// hatching rather than painted in the scale's lowest colour, a value it does not have;
// hovering still gives its value.
void OffsetPanel::blankBelowScale() {
  const double low = scale_->dataRange().lower;
  for (QCPColorMap* m : maps_) {
    QCPColorMapData* d = m->data();
    for (int x = 0; x < d->keySize(); ++x)
      for (int y = 0; y < d->valueSize(); ++y)
        if (d->cell(x, y) < low) d->setCell(x, y, std::nan(""));
  }
}

void OffsetPanel::explain(const Predictor& predictor, bool any_maps) {
  const ViTConfig& c = predictor.config();
  const QString model = method_title(c.model);
  if (!any_maps) {
    const bool has_offsets =
        !predictor.offset_magnitudes().empty() && !predictor.offset_magnitudes().front().empty();
    message_->setText(
        showingContributions() && has_offsets
            ? tr("%1 has no offset-indexed value matrices, so no offset carries values of its own.")
                  .arg(model)
            : tr("%1 has no per-offset weights: it is %2, which uses no offset-indexed matrices. "
                 "Load a Translution-family model (Translution, LoR-Translution or one of their variants) to "
                 "see "
                 "them.")
                  .arg(model, kind_of(c.model)));
    return;
  }
  const QString offsets = grid_h_ == 1 ? tr("1-D offset δ = i − j of the patches read row by row")
                                       : tr("offset δ = (dy, dx), query patch minus key patch");
  message_->setText(
      showingContributions()
          ? tr("%1, this canvas: for each %2, Σ α<sub>ij</sub> |W<sub>v</sub>[δ] x<sub>j</sub>| over the "
               "pairs at that offset, "
               "summed over heads: where the values the digit sends come from. Offset 0 outlined; the "
               "row beneath: CLS to itself, into CLS, out of CLS. Colours span the 1st to 99th "
               "percentile (brighter cells are clipped); hover for values.")
                .arg(model, offsets)
          : tr("%1: |W[δ]| (Frobenius norm) per %2; offset 0 outlined; the row beneath each map is CLS "
               "to itself, into CLS, out of CLS. Shared colour scale; hover for values.")
                .arg(model, offsets));
}

// One offset grid in offset coordinates: dx across, dy down, the (0, 0) offset
// outlined, and the three CLS matrices in a row two cells beneath the grid. The
// axes span exactly those cells. Appends the map's finite values to `values`.
QCPColorMap* OffsetPanel::addMap(QCPAxisRect* rect, const OffsetGrid& g, const QString& title,
                                 std::vector<double>& values) {
  const int rows = 2 * grid_h_ - 1 + 2, cols = 2 * grid_w_ - 1;  // + a gap row + the CLS row
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  QCPAxis* top = rect->axis(QCPAxis::atTop);
  y->setRangeReversed(true);
  x->setLabel(grid_h_ == 1 ? tr("δ = i − j (patches row by row)") : tr("dx"));
  y->setLabel(grid_h_ == 1 ? QString() : tr("dy"));
  integer_ticks(x, grid_w_ > 4 ? 3 : 1);
  y->setTicker(offset_ticks_and_cls(grid_h_, grid_h_ > 4 ? 3 : 1));
  // The cells cover the dy grid lines; beside the three CLS cells one would read as an axis.
  y->grid()->setVisible(false);
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
      if (std::isfinite(v)) values.push_back(v);
    }
  const float cls[3] = {g.cls_self, g.cls_in, g.cls_out};
  for (int k = 0; k < 3 && k < cols; ++k) {
    map->data()->setCell(k, rows - 1, cls[k]);
    values.push_back(cls[k]);
  }
  map->setInterpolate(false);
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
  const QString where =
      tr("layer %1, W%2").arg(map_layers_[index] + 1).arg(QString::fromStdString(g.projection));
  const QString quantity = showingContributions() ? tr("carried") : tr("|W| =");
  if (row < 2 * grid_h_ - 1 && column < 2 * grid_w_ - 1 && row >= 0 && column >= 0) {
    const int dy = row - (grid_h_ - 1), dx = column - (grid_w_ - 1);
    const double v = g.grid[row][column].item<double>();
    if (std::isnan(v))
      return tr("%1: no matrix at this offset (a causal sequence looks back only)").arg(where);
    if (grid_h_ == 1)
      return tr("%1, offset δ = %2: %3 %4").arg(where).arg(dx).arg(quantity).arg(v, 0, 'g', 4);
    return tr("%1, offset (dx %2, dy %3): %4 %5").arg(where).arg(dx).arg(dy).arg(quantity).arg(v, 0, 'g', 4);
  }
  if (row == 2 * grid_h_ && column >= 0 && column < 3) {
    const char* names[3] = {"CLS to itself", "into CLS", "out of CLS"};
    const float values[3] = {g.cls_self, g.cls_in, g.cls_out};
    return tr("%1, %2: %3 %4").arg(where, tr(names[column]), quantity).arg(values[column], 0, 'g', 4);
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

namespace translution::ui {

bool OffsetPanel::cellAt(const QPoint& pos, int* map, int* row, int* column) const {
  for (int i = 0; i < maps_.size(); ++i) {
    if (!maps_[i]->keyAxis()->axisRect()->rect().contains(pos)) continue;
    *map = i;
    *column = int(std::lround(maps_[i]->keyAxis()->pixelToCoord(pos.x()))) + grid_w_ - 1;
    *row = int(std::lround(maps_[i]->valueAxis()->pixelToCoord(pos.y()))) + grid_h_ - 1;
    return true;
  }
  return false;
}

// A click on an offset's cell selects it or, selected, deselects it; a drag from
// one cell to another selects the rectangle of offsets between them. The CLS row
// is chosen with the CLS box.
void OffsetPanel::pressCell(QMouseEvent* event) {
  press_map_ = -1;
  int map = 0, row = 0, column = 0;
  if (event->button() != Qt::LeftButton || !cellAt(event->pos(), &map, &row, &column)) return;
  if (row < 0 || column < 0 || row >= 2 * grid_h_ - 1 || column >= 2 * grid_w_ - 1) return;
  if (std::isnan(grids_[size_t(map)].grid[row][column].item<double>())) return;  // no matrix there
  press_map_ = map;
  press_row_ = row;
  press_column_ = column;
}

void OffsetPanel::releaseCell(QMouseEvent* event) {
  if (press_map_ < 0 || press_map_ >= maps_.size() || event->button() != Qt::LeftButton) return;
  const QCPColorMap* map = maps_[press_map_];
  press_map_ = -1;
  // The end cell in the first cell's map, held to the grid: a drag may overshoot its edge.
  const int column = std::clamp(
      int(std::lround(map->keyAxis()->pixelToCoord(event->pos().x()))) + grid_w_ - 1, 0, 2 * grid_w_ - 2);
  const int row = std::clamp(int(std::lround(map->valueAxis()->pixelToCoord(event->pos().y()))) + grid_h_ - 1,
                             0, 2 * grid_h_ - 2);
  const Offset first{press_row_ - (grid_h_ - 1), press_column_ - (grid_w_ - 1)};
  const Offset last{row - (grid_h_ - 1), column - (grid_w_ - 1)};
  if (first == last)
    knockout_bar_->toggle(first);
  else
    knockout_bar_->addRectangle(first, last);
}

// Hatching over the selected cells of the maps whose projection the knockout
// touches (and over their CLS row when the CLS matrices are chosen).
void OffsetPanel::drawSelection() {
  for (QCPAbstractItem* item : marks_) plot_->removeItem(item);
  marks_.clear();
  const OffsetKnockout k = knockout_bar_->knockout();
  for (int i = 0; i < maps_.size(); ++i) {
    const std::string& p = grids_[size_t(i)].projection;
    if ((p == "q" && !k.q) || (p == "k" && !k.k) || (p == "v" && !k.v)) continue;
    for (const Offset& o : k.offsets) markCell(i, double(o.dx), double(o.dy));
    if (k.any_cls())
      for (int c = 0; c < 3 && c < 2 * grid_w_ - 1; ++c)
        markCell(i, double(c - (grid_w_ - 1)), double(grid_h_ + 1));
  }
}

void OffsetPanel::markCell(int map, double x, double y) {
  QCPAxisRect* rect = maps_[map]->keyAxis()->axisRect();
  auto* mark = new QCPItemRect(plot_);
  mark->setClipAxisRect(rect);
  for (QCPItemPosition* corner : {mark->topLeft, mark->bottomRight}) {
    corner->setAxes(maps_[map]->keyAxis(), maps_[map]->valueAxis());
    corner->setAxisRect(rect);
  }
  mark->topLeft->setCoords(x - 0.5, y - 0.5);
  mark->bottomRight->setCoords(x + 0.5, y + 0.5);
  // Grey: seen over the map's darkest and brightest colours, and over the blank a knocked-out
  // matrix below the scale leaves (blankBelowScale).
  mark->setPen(QPen(QColor(140, 140, 140, 230), 1));
  mark->setBrush(QBrush(QColor(140, 140, 140, 230), Qt::BDiagPattern));
  mark->setSelectable(false);
  marks_ << mark;
}

void OffsetPanel::applyKnockout() {
  ModelSlot* slot = shownSlot();
  if (!slot) return;
  knockout_bar_->setWorking(true);
  knockout_bar_->setStatus(tr("Making a knocked-out copy of slot %1's model…").arg(slot->name()));
  knockout_->apply(slot, knockout_bar_->knockout());
}

void OffsetPanel::showKnockoutState() {
  ModelSlot* slot = shownSlot();
  const bool knocked = slot && knockout_->knockedOut(slot);
  knockout_bar_->setKnockedOut(knocked);
  if (knockout_->busy()) return;  // the status says a copy is being made
  knockout_bar_->setStatus(knocked
                               ? tr("Slot %1 predicts with a knocked-out copy (%2); Restore gives it its own "
                                    "model back.")
                                     .arg(slot->name(), knockout_->describe(slot))
                               : QString());
}

}  // namespace translution::ui
