#include "plot_legend.h"

#include <algorithm>

namespace translution::ui {
namespace {

constexpr char kColumns[] = "legendColumns";  // the plot's property: the columns asked for, 0 to fit
constexpr char kLeastHeight[] = "heightWithoutLegend";  // its minimum height before the legend came beneath

// The columns the legend gets: as many of its widest entry as fit the plot's width, at
// most as many as asked: entries too wide to share a row get a row each rather than be cut.
// A wrapped legend is a grid whose last row may hold empty cells: itemCount() counts
// the cells and item() is null at an empty one.
int columns_for(const QCustomPlot* plot) {
  const QCPLegend* legend = plot->legend;
  const int asked = plot->property(kColumns).toInt();
  int widest = 1, entries = 0;
  for (int i = 0; i < legend->itemCount(); ++i) {
    const QCPLayoutElement* entry = legend->item(i);
    if (!entry) continue;
    ++entries;
    widest = std::max(widest, entry->minimumOuterSizeHint().width() + legend->columnSpacing());
  }
  const int room = plot->viewport().width() - legend->margins().left() - legend->margins().right();
  const int fit = std::clamp(room / widest, 1, std::max(1, entries));
  return asked > 0 ? std::min(asked, fit) : fit;
}

// The plot's minimum height grows by the legend's rows: however many entries wrap
// beneath it, the axis rect keeps the height the plot's own minimum gave it.
void keep_axis_height(QCustomPlot* plot, int columns) {
  const QCPLegend* legend = plot->legend;
  int entries = 0, tallest = 0;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (const QCPLayoutElement* entry = legend->item(i)) {
      ++entries;
      tallest = std::max(tallest, entry->minimumOuterSizeHint().height());
    }
  const int rows = legend->visible() ? (entries + columns - 1) / columns : 0;
  const int legend_height = rows * tallest + std::max(0, rows - 1) * legend->rowSpacing() +
                            legend->margins().top() + legend->margins().bottom();
  plot->setMinimumHeight(plot->property(kLeastHeight).toInt() + legend_height);
}

void wrap_legend(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  const int columns = columns_for(plot);
  keep_axis_height(plot, columns);
  if (legend->wrap() == columns) return;
  legend->setWrap(columns);
  legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // re-places every entry by the new wrap
}

}  // namespace

bool legend_is_beneath(const QCustomPlot* plot) {
  return plot->legend && plot->legend->layout() == plot->plotLayout();
}

void show_legend_beneath(QCustomPlot* plot, int columns) {
  QCPLegend* legend = plot->legend;
  if (!legend) return;
  plot->setProperty(kColumns, columns);
  if (!legend_is_beneath(plot)) {
    plot->setProperty(kLeastHeight, plot->minimumHeight());
    QCPLayoutGrid* grid = plot->plotLayout();
    QCPAxisRect* rect = plot->axisRect();
    // The row and column of the main axis rect: the legend goes right under it.
    int row = 0, column = 0;
    for (int i = 0; i < grid->elementCount(); ++i)
      if (grid->elementAt(i) == rect) grid->indexToRowCol(i, row, column);
    if (QCPLayout* inset = legend->layout()) inset->take(legend);
    grid->insertRow(row + 1);
    grid->addElement(row + 1, column, legend);
    // A vanishing stretch: the row gets its minimum (the entries' height), the axis rect the rest.
    grid->setRowStretchFactor(row + 1, 0.001);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    legend->setMargins(QMargins(4, 0, 4, 2));
    // Before each layout pass: the width may have changed since the last one.
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { wrap_legend(plot); });
  }
  legend->setVisible(true);
  wrap_legend(plot);
}

}  // namespace translution::ui
