#pragma once
// Legends that never cover the data: a QCustomPlot legend taken out of its axis
// rect's inset layout (where it floats over the curves) and given a row of the
// plot's own layout beneath that axis rect, its entries wrapped into columns.
#include "qcustomplot_include.h"

namespace translution::ui {

// Moves `plot`'s legend into a new layout row beneath its main axis rect (the
// first call; later calls find it there), frameless, and shows it. As many
// entries go to a row as the plot's width holds, at most `columns` (0: no
// limit), worked out again before every replot, so a resized plot re-wraps its
// legend. The row takes only the height its entries need, and the plot's minimum
// height grows by it: the axis rect keeps the minimum the plot had before.
void show_legend_beneath(QCustomPlot* plot, int columns = 0);

// Whether the legend sits beneath the axis rect (after show_legend_beneath).
bool legend_is_beneath(const QCustomPlot* plot);

}  // namespace translution::ui
