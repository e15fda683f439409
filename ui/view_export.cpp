#include "view_export.h"

#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

#include "util/output_path.h"

namespace translution::ui {
namespace {

bool paint_svg(QWidget* widget, QIODevice* device) {
  QSvgGenerator svg;
  svg.setOutputDevice(device);
  svg.setSize(widget->size());
  svg.setViewBox(widget->rect());
  svg.setTitle(widget->window()->windowTitle());
  QPainter painter;
  if (!painter.begin(&svg)) return false;
  widget->render(&painter);
  return painter.end();
}

// One page the widget's size at 96 dpi, the widget drawn at its on-screen size.
bool paint_pdf(QWidget* widget, QIODevice* device) {
  QPdfWriter pdf(device);
  pdf.setResolution(96);
  pdf.setPageSize(QPageSize(QSizeF(widget->size()) * 72.0 / 96.0, QPageSize::Point));
  pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
  pdf.setTitle(widget->window()->windowTitle());
  QPainter painter;
  if (!painter.begin(&pdf)) return false;
  widget->render(&painter);
  return painter.end();
}

}  // namespace

QString picture_file_filter() {
  return QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)");
}

QString save_widget_picture(QWidget* widget, const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != "png" && suffix != "svg" && suffix != "pdf")
    return QObject::tr("%1: choose a name ending in .png, .svg or .pdf").arg(path);
  QString target;
  try {
    target = QString::fromStdString(checked_output_path(path.toStdString()));
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  QSaveFile file(target);  // a temporary file renamed into place on commit
  if (!file.open(QIODevice::WriteOnly))
    return QObject::tr("%1: cannot write: %2").arg(path, file.errorString());
  bool painted = false;
  if (suffix == "png") painted = widget->grab().save(&file, "PNG");
  if (suffix == "svg") painted = paint_svg(widget, &file);
  if (suffix == "pdf") painted = paint_pdf(widget, &file);
  if (!painted) {
    file.cancelWriting();
    return QObject::tr("%1: cannot draw the picture").arg(path);
  }
  if (!file.commit()) return QObject::tr("%1: cannot write: %2").arg(path, file.errorString());
  return {};
}

}  // namespace translution::ui
