#include "reflow_layout.h"

#include <algorithm>
#include <numeric>

#include <QWidget>

namespace translution::ui {
namespace {

int sum(const QList<int>& values) { return std::accumulate(values.begin(), values.end(), 0); }

int height_at(QLayoutItem* item, int width) {
  const int wanted = item->hasHeightForWidth() ? item->heightForWidth(width) : item->sizeHint().height();
  return std::max(wanted, item->minimumSize().height());
}

}  // namespace

ReflowLayout::ReflowLayout(int max_columns, QWidget* parent)
    : QLayout(parent), max_columns_(std::max(1, max_columns)) {}

ReflowLayout::~ReflowLayout() {
  while (QLayoutItem* item = takeAt(0)) delete item;
}

void ReflowLayout::setColumnStretch(int column, int stretch) {
  stretch_[column] = std::max(0, stretch);
  invalidate();
}

void ReflowLayout::addLayout(QLayout* layout) {
  addChildLayout(layout);
  addItem(layout);
}

void ReflowLayout::insertWidget(int index, QWidget* widget) {
  addChildWidget(widget);
  items_.insert(index < 0 ? items_.size() : std::min<qsizetype>(index, items_.size()),
                new QWidgetItem(widget));
  invalidate();
}

void ReflowLayout::addItem(QLayoutItem* item) {
  items_ << item;
  invalidate();
}

int ReflowLayout::count() const { return int(items_.size()); }

QLayoutItem* ReflowLayout::itemAt(int index) const {
  return index >= 0 && index < items_.size() ? items_[index] : nullptr;
}

QLayoutItem* ReflowLayout::takeAt(int index) {
  if (index < 0 || index >= items_.size()) return nullptr;
  invalidate();
  return items_.takeAt(index);
}

Qt::Orientations ReflowLayout::expandingDirections() const {
  Qt::Orientations directions;
  for (QLayoutItem* item : shown()) directions |= item->expandingDirections();
  return directions;
}

QList<QLayoutItem*> ReflowLayout::shown() const {
  QList<QLayoutItem*> parts;
  for (QLayoutItem* item : items_)
    if (!item->isEmpty()) parts << item;
  return parts;
}

int ReflowLayout::spacingOrDefault() const { return std::max(0, spacing()); }

int ReflowLayout::columnGap() const { return column_gap_ >= 0 ? column_gap_ : spacingOrDefault(); }

void ReflowLayout::setColumnGap(int gap) {
  column_gap_ = gap;
  invalidate();
}

// Column c holds parts c, c + columns, ...: its minimum is the widest of theirs, at
// their preferred widths in a column of stretch 0 beside others.
QList<int> ReflowLayout::columnMinimums(const QList<QLayoutItem*>& parts, int columns) const {
  QList<int> minimums(columns, 0);
  for (int i = 0; i < parts.size(); ++i) {
    const int c = i % columns;
    const bool preferred = columns > 1 && stretch_.value(c, 1) == 0;
    const int least = parts[i]->minimumSize().width();
    minimums[c] = std::max(minimums[c], preferred ? std::max(least, parts[i]->sizeHint().width()) : least);
  }
  return minimums;
}

// The spare width goes to the columns by their stretch factors, as in a grid layout.
void ReflowLayout::shareSpare(int spare, QList<int>& widths) const {
  const int columns = int(widths.size());
  QList<int> stretch(columns, 1);
  for (int c = 0; c < columns; ++c) stretch[c] = stretch_.value(c, 1);
  if (sum(stretch) == 0) stretch.fill(1);
  const int total = sum(stretch);
  int given = 0;
  for (int c = 0; c < columns; ++c) {
    const int share = c == columns - 1 ? spare - given : spare * stretch[c] / total;
    widths[c] += share;
    given += share;
  }
}

ReflowLayout::Arrangement ReflowLayout::arrange(const QList<QLayoutItem*>& parts, int width) const {
  Arrangement a;
  const int gap = columnGap();
  const int n = std::max(1, int(parts.size()));
  int columns = 1;  // the most that fit
  for (int c = std::min(max_columns_, n); c > 1 && columns == 1; --c)
    if (sum(columnMinimums(parts, c)) + gap * (c - 1) <= width) columns = c;
  const int rows = (n + columns - 1) / columns;
  a.columns = (n + rows - 1) / rows;  // the fewest giving those rows: 2 x 2, not 3 + 1
  // Regrouped, the parts' columns may need more than the most that fit did (a wide part
  // with another wide one): then the rows stay as they were.
  if (a.columns < columns && sum(columnMinimums(parts, a.columns)) + gap * (a.columns - 1) > width)
    a.columns = columns;
  a.widths = columnMinimums(parts, a.columns);
  shareSpare(std::max(0, width - sum(a.widths) - gap * (a.columns - 1)), a.widths);
  a.heights = QList<int>(rows, 0);
  for (int i = 0; i < parts.size(); ++i)
    a.heights[i / a.columns] =
        std::max(a.heights[i / a.columns], height_at(parts[i], a.widths[i % a.columns]));
  return a;
}

int ReflowLayout::columnsFor(int width) const {
  const QMargins m = contentsMargins();
  return arrange(shown(), width - m.left() - m.right()).columns;
}

int ReflowLayout::heightForWidth(int width) const {
  const QMargins m = contentsMargins();
  const Arrangement a = arrange(shown(), width - m.left() - m.right());
  return sum(a.heights) + spacingOrDefault() * std::max<int>(0, int(a.heights.size()) - 1) + m.top() +
         m.bottom();
}

// As narrow as the widest part (stacked), as low as the parts side by side with all the width
// they could take. The height a given width needs is heightForWidth's: a scroll area gives its
// widget the larger of that and this, so this must be no taller than any width needs (word-
// wrapped text at a narrow width is far taller than at the width the page gives it).
QSize ReflowLayout::minimumSize() const {
  const QList<QLayoutItem*> parts = shown();
  const QMargins m = contentsMargins();
  int widest = 0;
  for (QLayoutItem* item : parts) widest = std::max(widest, item->minimumSize().width());
  return {widest + m.left() + m.right(), heightForWidth(QWIDGETSIZE_MAX / 4)};
}

QSize ReflowLayout::sizeHint() const {
  const QList<QLayoutItem*> parts = shown();
  const QMargins m = contentsMargins();
  const int columns = std::min<int>(max_columns_, std::max(1, int(parts.size())));
  QList<int> widths(columns, 0);
  for (int i = 0; i < parts.size(); ++i)
    widths[i % columns] = std::max(widths[i % columns], parts[i]->sizeHint().width());
  const int width = sum(widths) + columnGap() * (columns - 1) + m.left() + m.right();
  return {width, heightForWidth(width)};
}

void ReflowLayout::setGeometry(const QRect& rect) {
  QLayout::setGeometry(rect);
  const QList<QLayoutItem*> parts = shown();
  if (parts.isEmpty()) return;
  const QRect inner = rect.marginsRemoved(contentsMargins());
  Arrangement a = arrange(parts, inner.width());
  const int gap = spacingOrDefault();
  const int spare = inner.height() - sum(a.heights) - gap * (int(a.heights.size()) - 1);
  // The height to spare goes to the rows with a part that grows down (a plot), else to all.
  QList<bool> growing(a.heights.size(), false);
  for (int i = 0; i < parts.size(); ++i)
    if (parts[i]->expandingDirections() & Qt::Vertical) growing[i / a.columns] = true;
  if (!growing.contains(true)) growing.fill(true);
  const int shares = int(growing.count(true));
  for (int row = 0; row < a.heights.size(); ++row)
    if (growing[row]) a.heights[row] += std::max(0, spare) / shares;
  int y = inner.y();
  for (int row = 0; row < a.heights.size(); ++row) {
    int x = inner.x();
    for (int col = 0; col < a.columns && row * a.columns + col < parts.size(); ++col) {
      parts[row * a.columns + col]->setGeometry(QRect(x, y, a.widths[col], a.heights[row]));
      x += a.widths[col] + columnGap();
    }
    y += a.heights[row] + gap;
  }
}

}  // namespace translution::ui
