#include "attention_view.h"

#include <ATen/ATen.h>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>

#include "attention_map.h"
#include "elided_label.h"
#include "infer/attention_inspection.h"
#include "method_titles.h"
#include "model_slot.h"
#include "plot_export.h"
#include "plot_legend.h"
#include "square_cells.h"

namespace translution::ui {
namespace {

constexpr double kCanvas = 84;
// The smallest a map may get and still be read: its square, in pixels.
constexpr int kMapSide = 160;

}  // namespace

AttentionView::AttentionView(ModelSlot* slot, QWidget* parent)
    : QWidget(parent),
      slot_(slot),
      title_(new ElidedLabel(this)),
      layer_(new QComboBox(this)),
      head_(new QComboBox(this)),
      main_(new AttentionMap(this)),
      main_scale_(new AttentionScale(tr("attention weight"), this)),
      matrix_plot_(new QCustomPlot(this)),
      distance_plot_(new QCustomPlot(this)),
      grid_(new QGridLayout) {
  main_->setMinimumSize(kMapSide, kMapSide);
  main_scale_->follow(main_, true);
  main_scale_->setToolTip(
      tr("Colour scale of the map above: from 0 to the query's largest weight on a patch "
         "(the weight on CLS is printed in the map's corner)"));
  buildMatrix();
  buildDistances();
  auto* query_map = new QVBoxLayout;
  query_map->setSpacing(0);
  query_map->addWidget(main_, 1);
  query_map->addWidget(main_scale_);
  query_map->addStretch(0);
  // The map is never taller than wide, so its square sits right on its scale; spare height goes beneath.
  main_->installEventFilter(this);
  // Two columns of two: what the query sees and the whole matrix; how far each head looks and every layer and
  // head.
  content_ = new QWidget(this);
  auto* body = new QGridLayout(content_);
  body->setContentsMargins(0, 0, 0, 0);
  body->addLayout(query_map, 0, 0);
  body->addWidget(matrix_plot_, 0, 1);
  body->addWidget(distance_plot_, 1, 0);
  body->addWidget(buildMultiples(), 1, 1);
  // The matrix's column also holds its axes (about 60 px): 3 to 4 gives the map and the matrix's cells about
  // the same side at the widths a view gets.
  body->setColumnStretch(0, 3);
  body->setColumnStretch(1, 4);
  body->setRowStretch(0, 1);
  body->setRowStretch(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(buildHeader());
  layout->addWidget(content_, 1);
  empty_ = new QLabel(this);
  empty_->setWordWrap(true);
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setVisible(false);
  layout->addWidget(empty_, 1);

  connect(slot_, &ModelSlot::loaded, this, &AttentionView::rebuild);
  connect(slot_, &ModelSlot::predicted, this, &AttentionView::refresh);
  connect(layer_, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
  connect(head_, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
  connect(main_, &AttentionMap::tokenClicked, this, &AttentionView::pickToken);
  rebuild();
}

bool AttentionView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == main_ && event->type() == QEvent::Resize)
    main_->setMaximumHeight(std::max(kMapSide, main_->width()));
  return QWidget::eventFilter(watched, event);
}

QLayout* AttentionView::buildHeader() {
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  layer_->setToolTip(
      tr("Layer (block) whose attention is shown, or the rollout through all layers (Abnar & Zuidema "
         "2020: heads averaged, the residual path added, layers multiplied)"));
  head_->setToolTip(tr("Attention head of that layer (the rollout averages them)"));
  // One width in every slot, for "rollout" and for two-digit heads, whatever the model and
  // whatever room the slot's title leaves: the views' headers line up. (Sized by their
  // entries, a box sized while still empty would keep that width as its minimum.)
  layer_->setMinimumContentsLength(6);
  head_->setMinimumContentsLength(2);
  for (QComboBox* box : {layer_, head_}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  }
  auto* header = new QHBoxLayout;
  header->addWidget(title_, 1);
  header->addWidget(new QLabel(tr("Layer"), this));
  header->addWidget(layer_);
  header->addWidget(new QLabel(tr("Head"), this));
  header->addWidget(head_);
  setTabOrder(layer_, head_);
  return header;
}

// The N x N matrix: square cells whatever the widget's shape, its colour scale beneath.
void AttentionView::buildMatrix() {
  matrix_ = new QCPColorMap(matrix_plot_->xAxis, matrix_plot_->yAxis);
  matrix_->setGradient(AttentionMap::gradient());
  matrix_->setInterpolate(false);
  matrix_plot_->yAxis->setRangeReversed(true);
  matrix_plot_->xAxis->setLabel(tr("key token (0 = CLS)"));
  matrix_plot_->yAxis->setLabel(tr("query token"));
  matrix_scale_ = new QCPColorScale(matrix_plot_);
  matrix_scale_->setType(QCPAxis::atBottom);
  matrix_scale_->setBarWidth(10);
  matrix_scale_->setLabel(tr("attention weight (log scale)"));
  matrix_scale_->setGradient(AttentionMap::gradient());  // linked, the map takes the scale's gradient
  // Logarithmic: a row's weights sum to 1 over some 50 keys, so most sit near 0.02 and a linear
  // scale up to the largest (0.3 or more) paints the matrix one dark colour.
  matrix_scale_->setDataScaleType(QCPAxis::stLogarithmic);
  matrix_scale_->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  matrix_scale_->axis()->ticker()->setTickCount(3);  // a bar as narrow as the map: few, unclipped labels
  matrix_scale_->setRangeDrag(false);
  matrix_scale_->setRangeZoom(false);
  matrix_plot_->plotLayout()->addElement(1, 0, matrix_scale_);
  matrix_plot_->plotLayout()->setRowStretchFactor(1, 0.001);
  matrix_->setColorScale(matrix_scale_);
  // Room for a data area of kMapSide pixels each way: the axes take about 60 px beside
  // it, and the axes with the scale and its labels 115 px beneath it.
  matrix_plot_->setMinimumSize(kMapSide + 60, kMapSide + 115);
  matrix_plot_->setToolTip(
      tr("The full attention matrix of this layer and head (row: query, column: key); the "
         "marked row is the query. Hover a cell for its weight."));
  matrix_plot_->setMouseTracking(true);
  enable_plot_export(matrix_plot_);
  row_marker_ = new QCPItemRect(matrix_plot_);
  row_marker_->setPen(QPen(QColor(80, 200, 255), 2));
  row_marker_->setBrush(Qt::NoBrush);
  // Its sides, and its top or bottom at the first or last row, lie outside the matrix.
  row_marker_->setClipToAxisRect(false);
  connect(matrix_plot_, &QCustomPlot::afterLayout, this, &AttentionView::layOutMatrix);
  connect(matrix_plot_, &QCustomPlot::mouseMove, this, &AttentionView::hoverMatrix);
}

void AttentionView::layOutMatrix() {
  fit_square_cells(matrix_plot_->axisRect(), Qt::AlignHCenter | Qt::AlignTop);
  place_scale_beneath(matrix_scale_, matrix_plot_->axisRect());
}

void AttentionView::buildDistances() {
  distance_plot_->xAxis->setLabel(tr("layer"));
  distance_plot_->yAxis->setLabel(tr("mean distance (patches)"));  // the tooltip says which distance
  // Tall enough that the axis's label fits beside it with the heads' key beneath.
  distance_plot_->setMinimumSize(kMapSide, 200);
  distance_plot_->setToolTip(
      tr("Each head's mean attention distance per layer, over every patch as the query: "
         "small is local (convolution-like), large is global"));
  distance_plot_->legend->setFont(QFont(distance_plot_->font().family(), 8));
  enable_plot_export(distance_plot_);
}

// Every layer and head for the same query, each map coloured to its own largest
// patch weight (so weak layers still show their pattern), and the scale that says so.
QWidget* AttentionView::buildMultiples() {
  auto* box = new QWidget(this);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  // One line (a wrapped label would make the views' height depend on their width, and the panel scroll).
  multiples_caption_ = new QLabel(tr("Every layer, same query:"), box);
  multiples_caption_->setMinimumWidth(0);
  multiples_caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  layout->addWidget(multiples_caption_);
  // The maps together in the middle of their box, at their preferred size: spread over its
  // width they would sit apart with a gap wider than a map between them.
  auto* centred = new QHBoxLayout;
  centred->addStretch(1);
  centred->addLayout(grid_);
  centred->addStretch(1);
  layout->addLayout(centred);
  layout->addStretch(1);  // the maps keep their shape; spare height goes beneath them
  layout->addSpacing(4);  // clear of the scale when no height is spare
  grid_->setSpacing(3);
  multiples_scale_ = new AttentionScale(tr("weight ÷ each map's largest"), box);
  multiples_scale_->setToolTip(
      tr("Colour scale of the small maps: each map runs from 0 to its own largest patch "
         "weight (hover a map for its numbers)"));
  layout->addWidget(multiples_scale_);
  return box;
}

void AttentionView::rebuild() {
  for (AttentionMap* m : multiples_) delete m;
  multiples_.clear();
  const auto p = slot_->predictor();
  const QSignalBlocker block_layer(layer_), block_head(head_);
  layer_->clear();
  head_->clear();
  // An empty slot's maps and axes would read as data: a line says what to do instead.
  content_->setVisible(bool(p));
  empty_->setVisible(!p);
  if (!p) {
    title_->setFullText(tr("%1: empty").arg(slot_->name()));  // as the Compare tab names its slots
    title_->setKeptEnd(QString());
    empty_->setText(
        tr("Slot %1 has no model: choose one in its picker on the Compare tab.").arg(slot_->name()));
    refresh();
    return;
  }
  const ViTConfig& c = p->config();
  const QString title = model_title(c.model, p->metadata());
  title_->setFullText(tr("%1: %2").arg(slot_->name(), title), QString::fromStdString(p->source()));
  title_->setKeptEnd(trained_mark(p->metadata()));
  for (int l = 0; l < c.depth; ++l) layer_->addItem(QString::number(l + 1));
  layer_->addItem(tr("rollout"));
  for (int h = 0; h < c.heads; ++h) head_->addItem(QString::number(h + 1));
  layer_->setCurrentIndex(int(c.depth) - 1);
  multiples_caption_->setText(c.heads > 1 ? tr("Every layer and head, same query:")
                                          : tr("Every layer, same query:"));
  // Several heads: one row per layer; one head: layers in rows of up to three, as few columns as
  // that many rows need (four layers two by two, not three and one). The maps share the matrix's
  // column (at least kMapSide + 60 px): as large as that allows, never under 36 px.
  const int rows = int(c.depth + 2) / 3;
  const int columns = c.heads > 1 ? int(c.heads) : int(c.depth + rows - 1) / rows;
  const int side = std::clamp((kMapSide + 60) / columns - 4, 36, 96);
  for (int l = 0; l < c.depth; ++l)
    for (int h = 0; h < c.heads; ++h) {
      auto* m = new AttentionMap(this);
      m->setCaption(c.heads > 1 ? tr("L%1 H%2").arg(l + 1).arg(h + 1) : tr("layer %1").arg(l + 1));
      m->setMinimumSize(std::min(side, 72), std::min(side, 72) + 16);  // + the caption
      m->setPreferredSize(QSize(side, side + 16));
      m->setProperty("readableMinimum", QSize(36, 52));  // small multiples: the pattern, not the detail
      connect(m, &AttentionMap::tokenClicked, this, &AttentionView::pickToken);
      const int k = l * int(c.heads) + h;
      grid_->addWidget(m, k / columns, k % columns);
      multiples_ << m;
    }
  refresh();
}

int AttentionView::queryToken() const {
  const auto p = slot_->predictor();
  if (!p) return -1;
  if (query_.cls) return 0;
  const ViTConfig& c = p->config();
  const int gh = int(c.grid_height()), gw = int(c.grid_width());
  const int row = std::clamp(int(query_.y / kCanvas * gh), 0, gh - 1);
  const int col = std::clamp(int(query_.x / kCanvas * gw), 0, gw - 1);
  return 1 + row * gw + col;
}

void AttentionView::setQuery(const AttentionQuery& query) {
  query_ = query;
  refresh();
}

void AttentionView::pickToken(int token) {
  const auto p = slot_->predictor();
  if (!p) return;
  const ViTConfig& c = p->config();
  AttentionQuery q;
  q.cls = token == 0;
  if (!q.cls) {
    const int gw = int(c.grid_width()), gh = int(c.grid_height());
    q.x = ((token - 1) % gw + 0.5) * kCanvas / gw;
    q.y = ((token - 1) / gw + 0.5) * kCanvas / gh;
  }
  Q_EMIT queryPicked(q);
}

bool AttentionView::rollout() const {
  return layer_->count() > 0 && layer_->currentIndex() == layer_->count() - 1;
}

void AttentionView::setRollout(bool rollout) {
  if (layer_->count() == 0) return;
  layer_->setCurrentIndex(rollout ? layer_->count() - 1 : layer_->count() - 2);
}

void AttentionView::refresh() {
  const auto p = slot_->predictor();
  const auto& prediction = slot_->lastPrediction();
  if (!p || !prediction || prediction->attention.empty()) {
    main_->clearData();
    for (AttentionMap* m : multiples_) m->clearData();
    matrix_->data()->clear();
    matrix_values_ = at::Tensor();
    row_marker_->setVisible(false);
    matrix_plot_->replot(QCustomPlot::rpQueuedReplot);
    distance_plot_->clearGraphs();
    distance_plot_->legend->setVisible(false);
    distance_plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const ViTConfig& c = p->config();
  const int gh = int(c.grid_height()), gw = int(c.grid_width()), query = queryToken();
  const int head = std::max(0, head_->currentIndex());
  head_->setEnabled(!rollout());
  // [N, N]: one head of one layer, or the rollout through all of them.
  const at::Tensor matrix = rollout()
                                ? attention_rollout(prediction->attention).to(at::kFloat)
                                : prediction->attention[size_t(std::max(0, layer_->currentIndex()))][head];
  main_->setData(prediction->canvas, matrix[query], gh, gw, query);
  for (int l = 0; l < int(prediction->attention.size()); ++l)
    for (int h = 0; h < c.heads; ++h)
      multiples_[l * int(c.heads) + h]->setData(prediction->canvas,
                                                prediction->attention[size_t(l)][h][query], gh, gw, query);
  showMatrix(matrix, query);
  showDistances(prediction->attention, gh, gw);
}

void AttentionView::showDistances(const std::vector<at::Tensor>& attention, int grid_h, int grid_w) {
  const QColor colours[] = {QColor(31, 119, 180),  QColor(214, 39, 40),  QColor(44, 160, 44),
                            QColor(148, 103, 189), QColor(255, 127, 14), QColor(23, 190, 207)};
  const int heads = int(attention.front().size(0));
  distance_plot_->clearGraphs();
  for (int h = 0; h < heads; ++h) {
    QCPGraph* g = distance_plot_->addGraph();
    g->setName(tr("head %1").arg(h + 1));
    g->setPen(QPen(colours[h % 6], 1.5));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colours[h % 6], colours[h % 6], 6));
  }
  double high = 1;
  for (size_t l = 0; l < attention.size(); ++l) {
    const at::Tensor d = mean_attention_distance(attention[l], grid_h, grid_w);
    for (int h = 0; h < heads; ++h) {
      distance_plot_->graph(h)->addData(double(l + 1), d[h].item<double>());
      high = std::max(high, d[h].item<double>());
    }
  }
  // One head needs no key; several get one beneath the plot, off the curves.
  if (heads > 1)
    show_legend_beneath(distance_plot_, 3);
  else
    distance_plot_->legend->setVisible(false);
  distance_plot_->xAxis->setRange(0.5, double(attention.size()) + 0.5);
  distance_plot_->yAxis->setRange(0, high * 1.1);
  distance_plot_->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionView::showMatrix(const at::Tensor& matrix, int query) {
  const int n = int(matrix.size(1));
  matrix_values_ = matrix.to(at::kFloat).contiguous();
  matrix_->data()->setSize(n, n);
  matrix_->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
  const float* v = matrix_values_.data_ptr<float>();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) matrix_->data()->setCell(j, i, v[i * n + j]);
  // Three decades down from the largest weight: fainter keys (and a causal row's zeros) take its end.
  const double top = std::max(double(matrix_values_.max().item<float>()), 1e-6);
  matrix_scale_->setDataRange(QCPRange(top / 1000, top));
  matrix_plot_->xAxis->setRange(-0.5, n - 0.5);
  matrix_plot_->yAxis->setRange(-0.5, n - 0.5);
  row_marker_->setVisible(true);
  // A frame around the query's row, half a row clear of it: at a few pixels a row, a frame on the
  // row's own edges would cover the weights it points at.
  row_marker_->topLeft->setCoords(-1.0, query - 1.0);
  row_marker_->bottomRight->setCoords(n, query + 1.0);
  matrix_plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString AttentionView::tokenName(int token) const {
  const auto p = slot_->predictor();
  if (token == 0 || !p) return tr("CLS");
  const int gw = int(p->config().grid_width());
  return tr("patch (row %1, column %2)").arg((token - 1) / gw + 1).arg((token - 1) % gw + 1);
}

QString AttentionView::describeMatrixCell(int query, int key) const {
  if (!matrix_values_.defined()) return {};
  const int n = int(matrix_values_.size(0));
  if (query < 0 || key < 0 || query >= n || key >= n) return {};
  return tr("query %1 → key %2: %3")
      .arg(tokenName(query), tokenName(key))
      .arg(matrix_values_[query][key].item<double>(), 0, 'g', 3);
}

void AttentionView::hoverMatrix(QMouseEvent* event) {
  QCPAxisRect* rect = matrix_plot_->axisRect();
  const QString text =
      rect->rect().contains(event->pos())
          ? describeMatrixCell(int(std::lround(matrix_plot_->yAxis->pixelToCoord(event->pos().y()))),
                               int(std::lround(matrix_plot_->xAxis->pixelToCoord(event->pos().x()))))
          : QString();
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, matrix_plot_);
}

}  // namespace translution::ui
