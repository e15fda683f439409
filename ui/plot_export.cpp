#include "plot_export.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QTemporaryFile>

namespace translution::ui {

QString export_plot(QCustomPlot* plot, const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == "png") {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !plot->toPixmap(0, 0, 2.0).save(&file, "PNG") || !file.commit())
      return QObject::tr("cannot write %1: %2").arg(path, file.errorString());
    return {};
  }
  if (suffix == "pdf") {
    // QCustomPlot writes PDFs by name: write next to the target, then rename over it.
    const QString temp = path + ".part";
    if (!plot->savePdf(temp)) return QObject::tr("cannot write %1").arg(temp);
    QFile::remove(path);
    if (!QFile::rename(temp, path)) {
      QFile::remove(temp);
      return QObject::tr("cannot move the PDF into place at %1").arg(path);
    }
    return {};
  }
  return QObject::tr("%1: choose a .png or .pdf file name").arg(path);
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
  plot->setToolTip(plot->toolTip() + (plot->toolTip().isEmpty() ? "" : "\n") + QObject::tr("Right-click to save as PNG or PDF"));
}

}  // namespace translution::ui
