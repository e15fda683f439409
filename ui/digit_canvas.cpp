#include "digit_canvas.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>

#include "image/ink.h"

namespace translution::ui {
namespace {
constexpr size_t kUndoDepth = 50;
}

DigitCanvas::DigitCanvas(int canvas_size, QWidget* parent)
    : QWidget(parent), size_(canvas_size), pixels_(size_t(canvas_size) * size_t(canvas_size), 0.0f) {
  qRegisterMetaType<at::Tensor>();
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setToolTip(tr("Left: draw (or erase / move, per tool) · Right: erase · Arrows: nudge 1 px"));
}

at::Tensor DigitCanvas::pixels() const {
  return at::from_blob(const_cast<float*>(pixels_.data()), {size_, size_}, at::kFloat).clone();
}

QPointF DigitCanvas::massCentre() const {
  double mass = 0, mx = 0, my = 0;
  for (int y = 0; y < size_; ++y)
    for (int x = 0; x < size_; ++x) {
      const double v = pixels_[size_t(y) * size_t(size_) + size_t(x)];
      mass += v;
      mx += v * x;
      my += v * y;
    }
  if (mass <= 0) return {-1, -1};
  return {mx / mass, my / mass};
}

QRectF DigitCanvas::canvasRect() const {
  const double side = std::min(width(), height());
  return {(width() - side) / 2.0, (height() - side) / 2.0, side, side};
}

double DigitCanvas::scale() const { return canvasRect().width() / size_; }

QPointF DigitCanvas::toCanvas(const QPointF& widget_pos) const {
  const QRectF r = canvasRect();
  return (widget_pos - r.topLeft()) / scale();
}

void DigitCanvas::setPixels(const at::Tensor& pixels, const CanvasOrigin& origin, UndoStep step) {
  const at::Tensor p = pixels.to(at::kFloat).clamp(0.0, 1.0).contiguous();
  if (p.dim() != 2 || p.size(0) != size_ || p.size(1) != size_) return;
  if (step == UndoStep::Push || !continuing_) pushUndo();
  continuing_ = step == UndoStep::Continue;
  std::copy(p.data_ptr<float>(), p.data_ptr<float>() + pixels_.size(), pixels_.begin());
  setOrigin(origin);
  changed();
}

void DigitCanvas::clear() {
  pushUndo();
  std::fill(pixels_.begin(), pixels_.end(), 0.0f);
  Q_EMIT inkEdited();
  setOrigin({});
  changed();
}

namespace {
at::Tensor as_tensor(const std::vector<float>& pixels, int size) {
  return at::from_blob(const_cast<float*>(pixels.data()), {size, size}, at::kFloat);
}
}  // namespace

QRect DigitCanvas::inkBox() const {
  const InkBox ink = ink_box(as_tensor(pixels_, size_));
  return ink.empty() ? QRect() : QRect(int(ink.left), int(ink.top), int(ink.width), int(ink.height));
}

QRectF DigitCanvas::guideBox() const {
  const QRect ink = inkBox();
  const QPointF centre =
      ink.isEmpty() ? QPointF(size_ / 2.0, size_ / 2.0) : QRectF(ink).adjusted(0, 0, 1, 1).center();
  return QRectF(centre.x() - 10, centre.y() - 10, 20, 20);
}

void DigitCanvas::undo() {
  if (undo_.empty()) return;
  continuing_ = false;
  pixels_ = std::move(undo_.back().pixels);
  setOrigin(undo_.back().origin);
  undo_.pop_back();
  Q_EMIT undoAvailable(!undo_.empty());
  changed();
}

void DigitCanvas::nudge(int dx, int dy) {
  std::vector<float> moved = shifted(pixels_, dx, dy);
  if (moved == pixels_) return;
  pushUndo();
  pixels_ = std::move(moved);
  changed();
}

void DigitCanvas::setTool(Tool tool) {
  tool_ = tool;
  update();  // the size guide shows with the Draw tool only
  setCursor(tool == Tool::Move    ? Qt::OpenHandCursor
            : tool == Tool::Query ? Qt::PointingHandCursor
                                  : Qt::CrossCursor);
}

void DigitCanvas::setPatchSize(int patch) {
  patch_ = std::max(1, patch);
  update();
}

void DigitCanvas::setGridVisible(bool visible) {
  grid_visible_ = visible;
  update();
}

void DigitCanvas::setBrushRadius(double radius) { brush_radius_ = std::clamp(radius, 0.5, 8.0); }

void DigitCanvas::pushUndo() {
  continuing_ = false;
  undo_.push_back({pixels_, origin_});
  if (undo_.size() > kUndoDepth) undo_.erase(undo_.begin());
  Q_EMIT undoAvailable(true);
}

void DigitCanvas::setOrigin(const CanvasOrigin& origin) {
  if (origin == origin_) return;
  origin_ = origin;
  Q_EMIT originChanged(origin_);
}

void DigitCanvas::changed() {
  update();
  Q_EMIT canvasChanged(pixels());
}

// A soft round brush: full ink inside radius-1, fading to none just past the
// radius, so strokes look like MNIST's anti-aliased pen rather than hard blocks.
void DigitCanvas::stamp(const QPointF& at, bool erase) {
  const double r = brush_radius_;
  const int x0 = int(std::floor(at.x() - r - 1)), x1 = int(std::ceil(at.x() + r + 1));
  const int y0 = int(std::floor(at.y() - r - 1)), y1 = int(std::ceil(at.y() + r + 1));
  for (int y = std::max(0, y0); y <= std::min(size_ - 1, y1); ++y)
    for (int x = std::max(0, x0); x <= std::min(size_ - 1, x1); ++x) {
      const double d = std::hypot(x + 0.5 - at.x(), y + 0.5 - at.y());
      const float ink = float(std::clamp(1.0 - (d - (r - 1.0)) / 1.5, 0.0, 1.0));
      float& p = pixels_[size_t(y) * size_t(size_) + size_t(x)];
      p = erase ? std::min(p, 1.0f - ink) : std::max(p, ink);
    }
}

void DigitCanvas::strokeTo(const QPointF& to, bool erase) {
  const QPointF delta = to - last_point_;
  const int steps = std::max(1, int(std::ceil(std::hypot(delta.x(), delta.y()) / 0.5)));
  for (int i = 1; i <= steps; ++i) stamp(last_point_ + delta * (double(i) / steps), erase);
  last_point_ = to;
}

std::vector<float> DigitCanvas::shifted(const std::vector<float>& base, int dx, int dy) const {
  const at::Tensor canvas = as_tensor(base, size_);
  int64_t sx = dx, sy = dy;
  clamp_shift_to_canvas(ink_box(canvas), size_, sx, sy);
  const at::Tensor moved = translution::shifted(canvas, sx, sy).contiguous();
  return {moved.data_ptr<float>(), moved.data_ptr<float>() + moved.numel()};
}

void DigitCanvas::mousePressEvent(QMouseEvent* event) {
  const QPointF p = toCanvas(event->position());
  if (tool_ == Tool::Query) {
    if (event->button() == Qt::LeftButton && p.x() >= 0 && p.y() >= 0 && p.x() < size_ && p.y() < size_)
      Q_EMIT patchClicked(int(p.y()) / patch_, int(p.x()) / patch_);
    return;
  }
  if (event->button() == Qt::LeftButton && tool_ == Tool::Move) {
    pushUndo();
    drag_base_ = pixels_;
    drag_start_ = p;
    stroking_ = true;
    setCursor(Qt::ClosedHandCursor);
    return;
  }
  if (event->button() != Qt::LeftButton && event->button() != Qt::RightButton) return;
  pushUndo();
  stroking_ = true;
  erasing_ = event->button() == Qt::RightButton || tool_ == Tool::Erase;
  Q_EMIT inkEdited();
  setOrigin({});
  last_point_ = p;
  stamp(p, erasing_);
  changed();
}

void DigitCanvas::mouseMoveEvent(QMouseEvent* event) {
  if (!stroking_) return;
  const QPointF p = toCanvas(event->position());
  if (!drag_base_.empty()) {
    const QPointF d = p - drag_start_;
    std::vector<float> moved = shifted(drag_base_, int(std::lround(d.x())), int(std::lround(d.y())));
    if (moved == pixels_) return;
    pixels_ = std::move(moved);
  } else {
    strokeTo(p, erasing_);
  }
  changed();
}

void DigitCanvas::mouseReleaseEvent(QMouseEvent*) {
  stroking_ = false;
  if (!drag_base_.empty()) {
    drag_base_.clear();
    setCursor(Qt::OpenHandCursor);
  }
}

void DigitCanvas::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Left: nudge(-1, 0); break;
    case Qt::Key_Right: nudge(1, 0); break;
    case Qt::Key_Up: nudge(0, -1); break;
    case Qt::Key_Down: nudge(0, 1); break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

void DigitCanvas::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().window());
  QImage image(size_, size_, QImage::Format_Grayscale8);
  for (int y = 0; y < size_; ++y) {
    uchar* line = image.scanLine(y);
    for (int x = 0; x < size_; ++x)
      line[x] = uchar(std::lround(255.0f * pixels_[size_t(y) * size_t(size_) + size_t(x)]));
  }
  const QRectF r = canvasRect();
  painter.drawImage(r, image);  // nearest-neighbour magnification keeps pixels crisp
  if (!overlay_.isNull()) painter.drawImage(r, overlay_);
  if (grid_visible_ && patch_ < size_) {
    painter.setPen(QPen(QColor(80, 160, 255, 110), 1));
    for (int k = patch_; k < size_; k += patch_) {
      const double offset = k * scale();
      painter.drawLine(QPointF(r.left() + offset, r.top()), QPointF(r.left() + offset, r.bottom()));
      painter.drawLine(QPointF(r.left(), r.top() + offset), QPointF(r.right(), r.top() + offset));
    }
  }
  if (guideVisible()) paintGuide(painter, r);
  paintMarks(painter, r);
  if (highlight_row_ >= 0 && tool_ == Tool::Query) {
    const double s = scale() * patch_;
    painter.setPen(QPen(QColor(255, 170, 0), 3));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(r.left() + highlight_col_ * s, r.top() + highlight_row_ * s, s, s));
  }
  painter.setPen(QPen(hasFocus() ? palette().highlight().color() : palette().mid().color(), 2));
  painter.drawRect(r.adjusted(1, 1, -1, -1));
}

// MNIST's digit size, where the user draws: the 20 x 20 box a digit's ink fills and
// the 28 x 28 frame around it.
void DigitCanvas::paintGuide(QPainter& painter, const QRectF& canvas) {
  const double s = scale();
  const QRectF box = guideBox();
  const QRectF on_screen(canvas.left() + box.left() * s, canvas.top() + box.top() * s, box.width() * s,
                         box.height() * s);
  painter.setBrush(Qt::NoBrush);
  painter.setPen(QPen(QColor(120, 220, 120, 150), 1, Qt::DotLine));
  painter.drawRect(on_screen.adjusted(-4 * s, -4 * s, 4 * s, 4 * s));
  painter.setPen(QPen(QColor(120, 220, 120, 200), 1.5, Qt::DashLine));
  painter.drawRect(on_screen);
  painter.setPen(QColor(120, 220, 120, 220));
  painter.drawText(on_screen.adjusted(0, -4 * s - 16, 0, 0).topLeft() + QPointF(0, 12),
                   tr("MNIST digit size"));
}

// Small rings at the marked positions, the current one filled: where the digit's centre
// lies at each whole-patch shift, read against the patch grid.
void DigitCanvas::paintMarks(QPainter& painter, const QRectF& canvas) {
  const double s = scale();
  painter.setRenderHint(QPainter::Antialiasing, true);
  for (int i = 0; i < marks_.size(); ++i) {
    const QPointF at = canvas.topLeft() + marks_[i] * s;
    const bool current = i == current_mark_;
    painter.setPen(QPen(QColor(255, 200, 60, current ? 255 : 200), current ? 2.5 : 1.5));
    painter.setBrush(current ? QBrush(QColor(255, 200, 60, 160)) : Qt::NoBrush);
    painter.drawEllipse(at, current ? 6.0 : 4.0, current ? 6.0 : 4.0);
  }
  painter.setRenderHint(QPainter::Antialiasing, false);
}

void DigitCanvas::setPositionMarks(const QVector<QPointF>& marks, int current) {
  marks_ = marks;
  current_mark_ = current;
  update();
}

void DigitCanvas::setOverlay(const QImage& overlay) {
  overlay_ = overlay;
  update();
}

void DigitCanvas::clearOverlay() {
  if (overlay_.isNull()) return;
  overlay_ = QImage();
  update();
}

void DigitCanvas::setHighlightedPatch(int row, int col) {
  highlight_row_ = row;
  highlight_col_ = col;
  update();
}

}  // namespace translution::ui
