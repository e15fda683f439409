#include "plot_export.h"

#include <cstdio>

#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QTemporaryFile>

#include "util/output_path.h"

namespace translution::ui {

QString export_plot(QCustomPlot* plot, const QString& requested) {
  const QString suffix = QFileInfo(requested).suffix().toLower();
  if (suffix != "png" && suffix != "pdf")
    return QObject::tr("%1: choose a .png or .pdf file name").arg(requested);
  QString path;
  try {  // never a device, FIFO or folder; a link writes to its target
    path = QString::fromStdString(checked_output_path(requested.toStdString()));
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  if (suffix == "png") {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !plot->toPixmap(0, 0, 2.0).save(&file, "PNG") || !file.commit())
      return QObject::tr("cannot write %1: %2").arg(path, file.errorString());
    return {};
  }
  if (suffix == "pdf") {
    // QCustomPlot writes PDFs by name: write a fresh file beside the target, then rename() over it.
    QTemporaryFile temp(path + ".tmp-XXXXXX");
    if (!temp.open()) return QObject::tr("%1: cannot write beside it: %2").arg(requested, temp.errorString());
    temp.close();
    if (!plot->savePdf(temp.fileName())) return QObject::tr("%1: cannot write the PDF").arg(requested);
    if (std::rename(QFile::encodeName(temp.fileName()).constData(), QFile::encodeName(path).constData()) != 0)
      return QObject::tr("%1: cannot move the PDF into place").arg(requested);
    temp.setAutoRemove(false);  // it is the target now
  }
  return {};
}

void enable_plot_export(QCustomPlot* plot) {
  plot->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot](const QPoint& at) {
    QMenu menu(plot);
    QAction* save = menu.addAction(QObject::tr("Save plot as PNG or PDF…"));
    if (menu.exec(plot->mapToGlobal(at)) != save) return;
    const QString path = QFileDialog::getSaveFileName(plot, QObject::tr("Save plot"), "plot.png",
                                                      QObject::tr("PNG image (*.png);;PDF document (*.pdf)"));
    if (path.isEmpty()) return;
    const QString error = export_plot(plot, path);
    if (!error.isEmpty()) QMessageBox::warning(plot, QObject::tr("Export failed"), error);
  });
  plot->setToolTip(plot->toolTip() + (plot->toolTip().isEmpty() ? "" : "\n") +
                   QObject::tr("Right-click to save as PNG or PDF"));
}

}  // namespace translution::ui
