#include "fitted_table.h"

#include <QHeaderView>
#include <QScrollBar>

namespace translution::ui {

FittedTable::FittedTable(int rows, int columns, QWidget* parent) : QTableWidget(rows, columns, parent) {
  setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  for (const QScrollBar* bar : {horizontalScrollBar(), verticalScrollBar()})
    connect(bar, &QScrollBar::rangeChanged, this, &QWidget::updateGeometry, Qt::QueuedConnection);
}

QSize FittedTable::sizeHint() const {
  const int frame = 2 * frameWidth();
  const QScrollBar* across = horizontalScrollBar();
  const QScrollBar* down = verticalScrollBar();
  const int header_width = verticalHeader()->isHidden() ? 0 : verticalHeader()->width();
  const int header_height = horizontalHeader()->isHidden() ? 0 : horizontalHeader()->height();
  return {frame + header_width + horizontalHeader()->length() + (down->isVisible() ? down->width() : 0),
          frame + header_height + verticalHeader()->length() + (across->isVisible() ? across->height() : 0)};
}

}  // namespace translution::ui
