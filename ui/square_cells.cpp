#include "square_cells.h"

namespace translution::ui {
namespace {

QCPRange around(double centre, double size) { return QCPRange(centre - size / 2, centre + size / 2); }

}  // namespace

void square_cells(QCPAxis* x, QCPAxis* y, const QCPRange& x_data, const QCPRange& y_data) {
  x->setRange(x_data);
  y->setRange(y_data);
  const QRect r = x->axisRect()->rect();
  if (r.width() <= 0 || r.height() <= 0) return;
  const double x_per_pixel = x->range().size() / r.width(), y_per_pixel = y->range().size() / r.height();
  // The axis with fewer units per pixel gets more units, until both match.
  if (x_per_pixel < y_per_pixel) x->setRange(around(x->range().center(), y_per_pixel * r.width()));
  else y->setRange(around(y->range().center(), x_per_pixel * r.height()));
}

void integer_ticks(QCPAxis* axis, double step) {
  QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
  ticker->setTickStep(step);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  axis->setTicker(ticker);
}

}  // namespace translution::ui
