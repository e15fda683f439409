#include "attention_map.h"

#include <ATen/ATen.h>
#include <QMouseEvent>
#include <QPainter>

namespace translution::ui {
namespace {

constexpr int kCaptionHeight = 16;
constexpr int kBarThickness = 10;

}  // namespace

AttentionMap::AttentionMap(QWidget* parent) : QWidget(parent) {
  setCursor(Qt::PointingHandCursor);
  describe();
}

void AttentionMap::setData(const at::Tensor& canvas, const at::Tensor& weights, int grid_h, int grid_w,
                           int query) {
  canvas_ = canvas.to(at::kFloat).contiguous();
  weights_ = weights.to(at::kFloat).contiguous();
  grid_h_ = grid_h;
  grid_w_ = grid_w;
  query_ = query;
  top_ = std::max(1e-12, patchWeights().max().item<double>());
  describe();
  update();
  Q_EMIT dataChanged();
}

void AttentionMap::clearData() {
  weights_ = at::Tensor();
  top_ = 0;
  describe();
  update();
  Q_EMIT dataChanged();
}

void AttentionMap::describe() {
  QString tip =
      tr("Attention of the query token (outlined) over the patches; click a patch to make it the query.");
  if (weights_.defined())
    tip += tr("\nColours run from 0 to this map's largest patch weight, %1; CLS takes %2 of the attention.")
               .arg(top_, 0, 'g', 3)
               .arg(weights_[0].item<double>(), 0, 'g', 3);
  setToolTip(tip);
}

at::Tensor AttentionMap::patchWeights() const {
  return weights_.defined() ? weights_.narrow(0, 1, grid_h_ * grid_w_).view({grid_h_, grid_w_})
                            : at::Tensor();
}

QRectF AttentionMap::mapArea() const {
  const int caption = caption_.isEmpty() ? 0 : kCaptionHeight;
  const double side = std::max(0, std::min(width(), height() - caption));
  return {(width() - side) / 2.0, caption_.isEmpty() ? (height() - side) / 2.0 : double(caption), side, side};
}

void AttentionMap::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const QRectF r = mapArea();
  if (!caption_.isEmpty()) painter.drawText(QRectF(0, 0, width(), kCaptionHeight), Qt::AlignCenter, caption_);
  painter.fillRect(r, Qt::black);
  if (canvas_.defined()) {
    const int s = int(canvas_.size(0));
    QImage image(s, s, QImage::Format_Grayscale8);
    const float* p = canvas_.data_ptr<float>();
    for (int y = 0; y < s; ++y)
      for (int x = 0; x < s; ++x)
        image.scanLine(y)[x] = uchar(std::lround(150.0f * std::clamp(p[y * s + x], 0.0f, 1.0f)));
    painter.drawImage(r, image);
  }
  if (!weights_.defined() || grid_h_ <= 0) return;
  // Colours are scaled to this row's largest patch weight, so the pattern shows
  // even when most of the attention goes to CLS (its weight is printed).
  const at::Tensor patches = patchWeights().contiguous();
  const double cw = r.width() / grid_w_, ch = r.height() / grid_h_;
  const float* w = patches.data_ptr<float>();
  for (int i = 0; i < grid_h_; ++i)
    for (int j = 0; j < grid_w_; ++j) {
      const double v = w[i * grid_w_ + j] / top_;
      QColor c = QColor::fromRgb(gradient_.color(v, QCPRange(0, 1)));
      c.setAlphaF(0.15 + 0.7 * v);
      painter.fillRect(QRectF(r.left() + j * cw, r.top() + i * ch, cw, ch), c);
    }
  if (query_ > 0) {
    const int qi = (query_ - 1) / grid_w_, qj = (query_ - 1) % grid_w_;
    painter.setPen(QPen(QColor(80, 200, 255), 2));
    painter.drawRect(QRectF(r.left() + qj * cw, r.top() + qi * ch, cw, ch));
  }
  // The weight on CLS where it fits (a small multiple may be too small; its tooltip has it).
  const QString cls = tr("CLS %1%").arg(100 * weights_[0].item<double>(), 0, 'f', 0);
  if (painter.fontMetrics().horizontalAdvance(cls) + 6 <= r.width()) {
    painter.setPen(Qt::white);
    painter.drawText(r.adjusted(3, 2, -3, -2), Qt::AlignTop | Qt::AlignLeft, cls);
  }
}

void AttentionMap::mousePressEvent(QMouseEvent* event) {
  const QRectF r = mapArea();
  if (grid_h_ <= 0 || !r.contains(event->position())) return;
  const int j = int((event->position().x() - r.left()) / (r.width() / grid_w_));
  const int i = int((event->position().y() - r.top()) / (r.height() / grid_h_));
  Q_EMIT tokenClicked(1 + std::clamp(i, 0, grid_h_ - 1) * grid_w_ + std::clamp(j, 0, grid_w_ - 1));
}

AttentionScale::AttentionScale(const QString& label, QWidget* parent) : QCustomPlot(parent) {
  plotLayout()->clear();  // no axis rect: the scale is all there is
  scale_ = new QCPColorScale(this);
  scale_->setType(QCPAxis::atBottom);
  scale_->setGradient(AttentionMap::gradient());
  scale_->setBarWidth(kBarThickness);
  scale_->setLabel(label);
  scale_->setRangeDrag(false);
  scale_->setRangeZoom(false);
  scale_->setDataRange(QCPRange(0, 1));
  scale_->axis()->ticker()->setTickCount(3);  // a bar as narrow as a map: few, unclipped labels
  scale_->setMargins(QMargins(0, 0, 0, 0));
  scale_->setAutoMargins(QCP::msNone);
  plotLayout()->addElement(0, 0, scale_);
  // The bar, its tick labels and the label, and nothing else.
  height_ = kBarThickness + 2 * fontMetrics().height() + 14;
  setFixedHeight(height_);
  setProperty("readableMinimum", QSize(60, height_));  // a strip, read along its length
  setToolTip(tr("Colour scale: %1").arg(label));
  connect(this, &QCustomPlot::afterLayout, this, &AttentionScale::alignBar);
}

void AttentionScale::follow(AttentionMap* map, bool track_top) {
  if (map_) map_->removeEventFilter(this);
  map_ = map;
  if (!map) return;
  map->installEventFilter(this);
  if (track_top) connect(map, &AttentionMap::dataChanged, this, [this, map] { setTop(map->colourTop()); });
}

void AttentionScale::setTop(double top) {
  scale_->setDataRange(QCPRange(0, top > 0 ? top : 1));
  replot(QCustomPlot::rpQueuedReplot);
}

bool AttentionScale::eventFilter(QObject* watched, QEvent* event) {
  if (watched == map_ && (event->type() == QEvent::Resize || event->type() == QEvent::Move))
    replot(QCustomPlot::rpQueuedReplot);
  return QCustomPlot::eventFilter(watched, event);
}

// The bar lies under the followed map's square: shift and stretch the scale by
// what separates the bar's ends from the square's.
void AttentionScale::alignBar() {
  if (!map_ || !map_->isVisible()) return;
  const QRectF area = map_->mapArea();
  const int left = mapFromGlobal(map_->mapToGlobal(area.topLeft().toPoint())).x();
  const int width = int(std::lround(area.width()));
  const QRect bar = scale_->axis()->axisRect()->rect(), outer = scale_->outerRect();
  if (bar.width() <= 0 || width <= 0) return;
  scale_->setOuterRect(QRect(outer.left() + left - bar.left(), outer.top(),
                             outer.width() + width - bar.width(), outer.height()));
  scale_->update(QCPLayoutElement::upLayout);
}

}  // namespace translution::ui
