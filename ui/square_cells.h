#pragma once
// Heat maps whose cells are squares on screen, whatever shape the axis rect has.
#include "qcustomplot_include.h"

namespace translution::ui {

// Sets the axes to the ranges that hold the data, then widens whichever has room
// to spare, so one unit on `x` and on `y` spans the same number of pixels; nothing
// is cut off. Call after the plot has been laid out (a replot, or on every resize),
// then replot again.
void square_cells(QCPAxis* x, QCPAxis* y, const QCPRange& x_data, const QCPRange& y_data);

// Integer ticks every `step` units (offsets and pixel positions are whole numbers).
void integer_ticks(QCPAxis* axis, double step);

}  // namespace translution::ui
