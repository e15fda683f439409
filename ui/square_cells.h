#pragma once
// Heat maps whose cells are squares on screen, whatever shape the axis rect has.
#include "qcustomplot_include.h"

namespace translution::ui {

// Widens the range of whichever axis has room to spare, so one unit on `x` and on
// `y` spans the same number of pixels; never narrows a range, so nothing is cut
// off. Call after the plot has been laid out (a replot), then replot again.
void square_cells(QCPAxis* x, QCPAxis* y);

// Integer ticks every `step` units (offsets and pixel positions are whole numbers).
void integer_ticks(QCPAxis* axis, double step);

}  // namespace translution::ui
