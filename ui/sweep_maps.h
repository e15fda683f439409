#pragma once
// Heat maps of translation sweeps, one per model on a shared, labelled 0-1
// colour scale. Each cell is a position of the digit: both axes are the digit's
// centre in canvas pixels, and the model's patch grid is drawn over the map (a
// relative encoding that generalises across whole-patch shifts shows a lattice
// at the grid's spacing). Titles sit above the maps, outside the data.
#include <QList>
#include <QString>

#include "qcustomplot_include.h"
#include "train/translation_sweep.h"

namespace translution::ui {

struct TitledSweep {
  QString title;
  SweepResult result;
  int patch = 0;  // the model's patch size (0: no grid)
  QColor colour;  // the slot's colour, for the title
};

class SweepMaps : public QCustomPlot {
  Q_OBJECT
 public:
  explicit SweepMaps(QWidget* parent = nullptr);
  void showSweeps(const QList<TitledSweep>& sweeps);
  int mapCount() const { return maps_.size(); }
  QCPColorMap* map(int i) const { return maps_.value(i); }
  // Canvas coordinate of the digit's centre at sweep position `top_left`.
  static double centreOf(const SweepResult& r, int64_t top_left) {
    return double(top_left) + r.digit_size / 2.0;
  }

 private:
  // The least width and height a map with its axes and title takes, and the colour scale's width.
  static constexpr int kMapWidth = 230, kMapHeight = 230, kScaleWidth = 80;
  static int columnsFor(int width, int maps);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void arrange();  // the maps in as many columns as the width holds
  void drawPatchGrid(QCPAxisRect* rect, const SweepResult& r, int patch);
  QList<QCPColorMap*> maps_;
  QCPLayoutGrid* grid_ = nullptr;  // the maps' grid, owned by the plot's layout
  int columns_ = 0;                // as arranged (0: not yet)
};

}  // namespace translution::ui
