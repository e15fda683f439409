#pragma once
// Heat maps whose cells are squares on screen, whatever shape the axis rect has.
#include "qcustomplot_include.h"

namespace translution::ui {

// Sets the axes to the ranges that hold the data, then widens whichever has room
// to spare, so one unit on `x` and on `y` spans the same number of pixels; nothing
// is cut off. Call after the plot has been laid out (a replot, or on every resize),
// then replot again.
void square_cells(QCPAxis* x, QCPAxis* y, const QCPRange& x_data, const QCPRange& y_data);

// The other way round: the axes keep exactly their ranges and `rect` gives up
// width or height, so one unit of its bottom axis spans as many pixels as one
// unit of its left axis (to within a pixel). The rect keeps its place in the
// layout; `align` says where in that place it sits. Call from the plot's
// afterLayout signal: the layout sizes the rect anew on every replot, and
// afterLayout comes after that and before anything is drawn.
void fit_square_cells(QCPAxisRect* rect, Qt::Alignment align = Qt::AlignCenter);

// Lays a horizontal colour scale's bar under `rect`'s data area: as wide as it
// and just below its outer rect (the axis labels). Call after fit_square_cells.
void place_scale_beneath(QCPColorScale* scale, const QCPAxisRect* rect);

// Stands a vertical colour scale's bar beside `rect`'s data area: as tall as it (or as its
// label, if longer), level with it, and moved left up to its outer rect where
// fit_square_cells left a gap. Call after that.
void place_scale_beside(QCPColorScale* scale, const QCPAxisRect* rect);

// Integer ticks every `step` units (offsets and pixel positions are whole numbers).
void integer_ticks(QCPAxis* axis, double step);

}  // namespace translution::ui
