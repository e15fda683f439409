#include "attention_map.h"

#include <QMouseEvent>
#include <QPainter>

#include <ATen/ATen.h>

namespace translution::ui {

AttentionMap::AttentionMap(QWidget* parent) : QWidget(parent) {
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Attention of the query token (outlined) over the patches; click a patch to make it the query"));
}

void AttentionMap::setData(const at::Tensor& canvas, const at::Tensor& weights, int grid_h, int grid_w, int query) {
  canvas_ = canvas.to(at::kFloat).contiguous();
  weights_ = weights.to(at::kFloat).contiguous();
  grid_h_ = grid_h;
  grid_w_ = grid_w;
  query_ = query;
  update();
}

void AttentionMap::clearData() {
  weights_ = at::Tensor();
  update();
}

at::Tensor AttentionMap::patchWeights() const {
  return weights_.defined() ? weights_.narrow(0, 1, grid_h_ * grid_w_).view({grid_h_, grid_w_}) : at::Tensor();
}

QRectF AttentionMap::area() const {
  const double side = std::min(width(), height() - (caption_.isEmpty() ? 0 : 16));
  return {(width() - side) / 2.0, caption_.isEmpty() ? (height() - side) / 2.0 : 16.0, side, side};
}

void AttentionMap::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const QRectF r = area();
  if (!caption_.isEmpty()) painter.drawText(QRectF(0, 0, width(), 16), Qt::AlignCenter, caption_);
  painter.fillRect(r, Qt::black);
  if (canvas_.defined()) {
    const int s = int(canvas_.size(0));
    QImage image(s, s, QImage::Format_Grayscale8);
    const float* p = canvas_.data_ptr<float>();
    for (int y = 0; y < s; ++y)
      for (int x = 0; x < s; ++x) image.scanLine(y)[x] = uchar(std::lround(150.0f * std::clamp(p[y * s + x], 0.0f, 1.0f)));
    painter.drawImage(r, image);
  }
  if (!weights_.defined() || grid_h_ <= 0) return;
  // Colours are scaled to this row's largest patch weight, so the pattern shows
  // even when most of the attention goes to CLS (its weight is printed).
  const at::Tensor patches = patchWeights();
  const double top = std::max(1e-12, patches.max().item<double>());
  const double cw = r.width() / grid_w_, ch = r.height() / grid_h_;
  const float* w = patches.contiguous().data_ptr<float>();
  for (int i = 0; i < grid_h_; ++i)
    for (int j = 0; j < grid_w_; ++j) {
      const double v = w[i * grid_w_ + j] / top;
      QColor c = QColor::fromRgb(gradient_.color(v, QCPRange(0, 1)));
      c.setAlphaF(0.15 + 0.7 * v);
      painter.fillRect(QRectF(r.left() + j * cw, r.top() + i * ch, cw, ch), c);
    }
  if (query_ > 0) {
    const int qi = (query_ - 1) / grid_w_, qj = (query_ - 1) % grid_w_;
    painter.setPen(QPen(QColor(80, 200, 255), 2));
    painter.drawRect(QRectF(r.left() + qj * cw, r.top() + qi * ch, cw, ch));
  }
  painter.setPen(Qt::white);
  painter.drawText(r.adjusted(3, 2, -3, -2), Qt::AlignTop | Qt::AlignLeft,
                   tr("CLS %1%").arg(100 * weights_[0].item<double>(), 0, 'f', 0));
}

void AttentionMap::mousePressEvent(QMouseEvent* event) {
  const QRectF r = area();
  if (grid_h_ <= 0 || !r.contains(event->position())) return;
  const int j = int((event->position().x() - r.left()) / (r.width() / grid_w_));
  const int i = int((event->position().y() - r.top()) / (r.height() / grid_h_));
  Q_EMIT tokenClicked(1 + std::clamp(i, 0, grid_h_ - 1) * grid_w_ + std::clamp(j, 0, grid_w_ - 1));
}

}  // namespace translution::ui
