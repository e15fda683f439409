#pragma once
// Right-click on any plot: save it as PNG or PDF (written to a temporary file
// and renamed, so a failed export never leaves half a file).
#include "qcustomplot_include.h"

namespace translution::ui {

void enable_plot_export(QCustomPlot* plot);
// Throws nothing; returns an error message, empty on success.
QString export_plot(QCustomPlot* plot, const QString& path);  // format from the suffix: .png or .pdf

}  // namespace translution::ui
