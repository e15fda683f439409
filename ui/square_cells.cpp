#include "square_cells.h"

#include <algorithm>
#include <cmath>

namespace translution::ui {
namespace {

QCPRange around(double centre, double size) { return QCPRange(centre - size / 2, centre + size / 2); }

// Where a span of `size` pixels sits in `room` pixels starting at `start`.
int place(int start, int room, int size, bool at_start, bool at_end) {
  if (at_start) return start;
  if (at_end) return start + room - size;
  return start + (room - size) / 2;
}

}  // namespace

void square_cells(QCPAxis* x, QCPAxis* y, const QCPRange& x_data, const QCPRange& y_data) {
  x->setRange(x_data);
  y->setRange(y_data);
  const QRect r = x->axisRect()->rect();
  if (r.width() <= 0 || r.height() <= 0) return;
  const double x_per_pixel = x->range().size() / r.width(), y_per_pixel = y->range().size() / r.height();
  // The axis with fewer units per pixel gets more units, until both match.
  if (x_per_pixel < y_per_pixel)
    x->setRange(around(x->range().center(), y_per_pixel * r.width()));
  else
    y->setRange(around(y->range().center(), x_per_pixel * r.height()));
}

void fit_square_cells(QCPAxisRect* rect, Qt::Alignment align) {
  const QCPRange x = rect->axis(QCPAxis::atBottom)->range(), y = rect->axis(QCPAxis::atLeft)->range();
  const QRect inner = rect->rect();
  if (inner.width() <= 0 || inner.height() <= 0 || x.size() <= 0 || y.size() <= 0) return;
  const double aspect = x.size() / y.size();  // the data area's width over its height
  int width = inner.width(), height = inner.height();
  if (width > height * aspect)
    width = std::max(1, int(std::lround(height * aspect)));
  else
    height = std::max(1, int(std::lround(width / aspect)));
  // The margins (axes, labels, title) stay as the layout computed them around the smaller data area.
  const QMargins m = rect->margins();
  const QRect outer = rect->outerRect();
  const int outer_width = width + m.left() + m.right(), outer_height = height + m.top() + m.bottom();
  const int left =
      place(outer.left(), outer.width(), outer_width, align & Qt::AlignLeft, align & Qt::AlignRight);
  const int top =
      place(outer.top(), outer.height(), outer_height, align & Qt::AlignTop, align & Qt::AlignBottom);
  rect->setOuterRect(QRect(left, top, outer_width, outer_height));
  rect->update(QCPLayoutElement::upLayout);  // its inset layout (legend, items) follows
}

void place_scale_beneath(QCPColorScale* scale, const QCPAxisRect* rect) {
  const QRect bar = scale->axis()->axisRect()->rect(), data = rect->rect(), outer = scale->outerRect();
  if (bar.width() <= 0) return;
  // Shift and stretch the scale by what separates its bar from the data area's sides.
  const int top = rect->outerRect().bottom() + 1;
  scale->setOuterRect(QRect(outer.left() + (data.left() - bar.left()), top,
                            outer.width() + (data.width() - bar.width()), outer.height()));
  scale->update(QCPLayoutElement::upLayout);
}

void place_scale_beside(QCPColorScale* scale, const QCPAxisRect* rect) {
  const QRect bar = scale->axis()->axisRect()->rect(), data = rect->rect(), outer = scale->outerRect();
  if (bar.height() <= 0 || data.height() <= 0) return;
  // As tall as the data area, but never shorter than its label reads along it (a small map's
  // bar keeps its label whole), nor taller than the layout made it; centred on the data area.
  const int label = QFontMetrics(scale->axis()->labelFont()).horizontalAdvance(scale->label());
  const int height = std::min(bar.height(), std::max(data.height(), label));
  const int top = data.center().y() - height / 2;
  const int left = std::min(outer.left(), rect->outerRect().right() + 1);
  // Shift and stretch the scale by what separates its bar from that span.
  scale->setOuterRect(
      QRect(left, outer.top() + (top - bar.top()), outer.width(), outer.height() + (height - bar.height())));
  scale->update(QCPLayoutElement::upLayout);
}

void integer_ticks(QCPAxis* axis, double step) {
  QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
  ticker->setTickStep(step);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  axis->setTicker(ticker);
}

}  // namespace translution::ui
