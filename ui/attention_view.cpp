#include "attention_view.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <ATen/ATen.h>

#include "attention_map.h"
#include "infer/attention_inspection.h"
#include "model_slot.h"
#include "plot_export.h"

namespace translution::ui {
namespace {
constexpr double kCanvas = 84;
}

AttentionView::AttentionView(ModelSlot* slot, QWidget* parent)
    : QWidget(parent),
      slot_(slot),
      title_(new QLabel(this)),
      layer_(new QComboBox(this)),
      head_(new QComboBox(this)),
      main_(new AttentionMap(this)),
      matrix_plot_(new QCustomPlot(this)),
      distance_plot_(new QCustomPlot(this)),
      grid_(new QGridLayout) {
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  layer_->setToolTip(tr("Layer (block) whose attention is shown, or the rollout through all layers (Abnar & Zuidema "
                        "2020: heads averaged, the residual path added, layers multiplied)"));
  head_->setToolTip(tr("Attention head"));
  matrix_ = new QCPColorMap(matrix_plot_->xAxis, matrix_plot_->yAxis);
  matrix_->setGradient(QCPColorGradient::gpHot);
  matrix_->setInterpolate(false);
  matrix_plot_->yAxis->setRangeReversed(true);
  matrix_plot_->xAxis->setLabel(tr("key token (0 = CLS)"));
  matrix_plot_->yAxis->setLabel(tr("query token"));
  matrix_plot_->setMinimumSize(180, 180);
  matrix_plot_->setToolTip(tr("The full attention matrix of this layer and head; the marked row is the query"));
  enable_plot_export(matrix_plot_);
  row_marker_ = new QCPItemRect(matrix_plot_);
  row_marker_->setPen(QPen(QColor(80, 200, 255), 2));
  row_marker_->setBrush(Qt::NoBrush);

  auto* header = new QHBoxLayout;
  header->addWidget(title_, 1);
  header->addWidget(new QLabel(tr("Layer"), this));
  header->addWidget(layer_);
  header->addWidget(new QLabel(tr("Head"), this));
  header->addWidget(head_);
  distance_plot_->xAxis->setLabel(tr("layer"));
  distance_plot_->yAxis->setLabel(tr("mean distance (patches)"));
  distance_plot_->setMinimumSize(150, 150);
  distance_plot_->setToolTip(tr("Each head's mean attention distance per layer, over every patch as the query: "
                                "small is local (convolution-like), large is global"));
  enable_plot_export(distance_plot_);
  auto* top = new QHBoxLayout;
  top->addWidget(main_, 1);
  top->addWidget(matrix_plot_, 1);
  top->addWidget(distance_plot_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(header);
  layout->addLayout(top, 3);
  auto* caption = new QLabel(tr("Every layer (rows) and head (columns), same query:"), this);
  layout->addWidget(caption);
  layout->addLayout(grid_, 4);

  connect(slot_, &ModelSlot::loaded, this, &AttentionView::rebuild);
  connect(slot_, &ModelSlot::predicted, this, &AttentionView::refresh);
  connect(layer_, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
  connect(head_, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
  connect(main_, &AttentionMap::tokenClicked, this, &AttentionView::pickToken);
  rebuild();
}

void AttentionView::rebuild() {
  for (AttentionMap* m : multiples_) delete m;
  multiples_.clear();
  const auto p = slot_->predictor();
  const QSignalBlocker block_layer(layer_), block_head(head_);
  layer_->clear();
  head_->clear();
  if (!p) {
    title_->setText(tr("Slot %1: empty").arg(slot_->name()));
    return;
  }
  const ViTConfig& c = p->config();
  title_->setText(tr("Slot %1: %2").arg(slot_->name(), QString::fromStdString(c.model)));
  for (int l = 0; l < c.depth; ++l) layer_->addItem(QString::number(l + 1));
  layer_->addItem(tr("rollout"));
  for (int h = 0; h < c.heads; ++h) head_->addItem(QString::number(h + 1));
  layer_->setCurrentIndex(int(c.depth) - 1);
  // One head: layers in rows of up to six; several heads: one row per layer.
  const int columns = c.heads > 1 ? int(c.heads) : std::min<int>(int(c.depth), 6);
  for (int l = 0; l < c.depth; ++l)
    for (int h = 0; h < c.heads; ++h) {
      auto* m = new AttentionMap(this);
      m->setCaption(c.heads > 1 ? tr("L%1 H%2").arg(l + 1).arg(h + 1) : tr("layer %1").arg(l + 1));
      m->setMinimumSize(40, 56);
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

bool AttentionView::rollout() const { return layer_->count() > 0 && layer_->currentIndex() == layer_->count() - 1; }

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
    return;
  }
  const ViTConfig& c = p->config();
  const int gh = int(c.grid_height()), gw = int(c.grid_width()), query = queryToken();
  const int head = std::max(0, head_->currentIndex());
  head_->setEnabled(!rollout());
  // [N, N]: one head of one layer, or the rollout through all of them.
  const at::Tensor matrix = rollout() ? attention_rollout(prediction->attention).to(at::kFloat)
                                      : prediction->attention[size_t(std::max(0, layer_->currentIndex()))][head];
  main_->setData(prediction->canvas, matrix[query], gh, gw, query);
  for (int l = 0; l < int(prediction->attention.size()); ++l)
    for (int h = 0; h < c.heads; ++h)
      multiples_[l * int(c.heads) + h]->setData(prediction->canvas, prediction->attention[size_t(l)][h][query], gh, gw, query);
  showMatrix(matrix, query);
  showDistances(prediction->attention, gh, gw);
}

void AttentionView::showDistances(const std::vector<at::Tensor>& attention, int grid_h, int grid_w) {
  const QColor colours[] = {QColor(31, 119, 180), QColor(214, 39, 40), QColor(44, 160, 44),
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
  distance_plot_->xAxis->setRange(0.5, double(attention.size()) + 0.5);
  distance_plot_->yAxis->setRange(0, high * 1.1);
  distance_plot_->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionView::showMatrix(const at::Tensor& matrix, int query) {
  const int n = int(matrix.size(1));
  const at::Tensor m = matrix.contiguous();
  matrix_->data()->setSize(n, n);
  matrix_->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
  const float* v = m.data_ptr<float>();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) matrix_->data()->setCell(j, i, v[i * n + j]);
  matrix_->rescaleDataRange(true);
  matrix_plot_->xAxis->setRange(-0.5, n - 0.5);
  matrix_plot_->yAxis->setRange(-0.5, n - 0.5);
  row_marker_->topLeft->setCoords(-0.5, query - 0.5);
  row_marker_->bottomRight->setCoords(n - 0.5, query + 0.5);
  matrix_plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace translution::ui
