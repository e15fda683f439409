#include "sweep_maps.h"

#include <cmath>
#include <numeric>

#include "plot_export.h"
#include "square_cells.h"

namespace translution::ui {

SweepMaps::SweepMaps(QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(160, 160);  // a width of 0 at the first layout would have it paint into an empty buffer
  enable_plot_export(this);
  plotLayout()->clear();
  // Square cells: after every layout pass each map's rect gives up width or height, so that its axes keep
  // exactly the positions' range (no margin of canvas that was never swept).
  connect(this, &QCustomPlot::afterLayout, this, [this] {
    for (QCPColorMap* m : maps_) fit_square_cells(m->keyAxis()->axisRect());
  });
}

void SweepMaps::showSweeps(const QList<TitledSweep>& sweeps) {
  plotLayout()->clear();
  grid_ = nullptr;  // deleted with the layout's elements
  clearPlottables();
  clearItems();
  maps_.clear();
  if (sweeps.isEmpty()) {
    replot();
    return;
  }
  auto* scale = new QCPColorScale(this);
  QCPColorGradient gradient(QCPColorGradient::gpThermal);
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  scale->setGradient(gradient);
  scale->setDataRange(QCPRange(0, 1));
  scale->axis()->setLabel(tr("accuracy (0 to 1)"));
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(0.25);
  scale->axis()->setTicker(ticker);
  scale->setBarWidth(12);
  grid_ = new QCPLayoutGrid;
  grid_->setFillOrder(QCPLayoutGrid::foColumnsFirst, false);
  plotLayout()->addElement(0, 0, grid_);
  for (int s = 0; s < sweeps.size(); ++s) {
    const SweepResult& r = sweeps[s].result;
    auto* rect = new QCPAxisRect(this);
    grid_->addElement(rect);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    QCPAxis* top = rect->axis(QCPAxis::atTop);
    y->setRangeReversed(true);  // canvas rows grow downwards
    x->setLabel(tr("centre x (canvas px)"));
    y->setLabel(tr("centre y (canvas px)"));
    top->setVisible(true);
    top->setTicks(false);
    top->setTickLabels(false);
    top->setLabel(tr("%1: mean %2%").arg(sweeps[s].title).arg(100 * r.mean_accuracy(), 0, 'f', 1));
    top->setLabelColor(sweeps[s].colour.isValid() ? sweeps[s].colour : Qt::black);
    auto* map = new QCPColorMap(x, y);
    // Cells on the positions' common step: the last position is off the stride when the stride does not
    // divide the canvas's free width, and cells between positions stay empty (transparent).
    int64_t step = 0;
    for (size_t i = 1; i < r.positions.size(); ++i)
      step = std::gcd(step, r.positions[i] - r.positions[i - 1]);
    step = std::max<int64_t>(step, 1);
    const int cells = int((r.positions.back() - r.positions.front()) / step) + 1;
    const double first = centreOf(r, r.positions.front()), last = centreOf(r, r.positions.back());
    map->data()->setSize(cells, cells);
    map->data()->setRange(QCPRange(first, last), QCPRange(first, last));
    map->data()->fill(std::nan(""));
    for (size_t yi = 0; yi < r.positions.size(); ++yi)
      for (size_t xi = 0; xi < r.positions.size(); ++xi)
        map->data()->setCell(int((r.positions[xi] - r.positions.front()) / step),
                             int((r.positions[yi] - r.positions.front()) / step),
                             r.accuracy[int64_t(yi)][int64_t(xi)].item<double>());
    map->setInterpolate(false);
    map->setColorScale(scale);
    const double half = double(step) / 2;
    x->setRange(first - half, last + half);
    y->setRange(first - half, last + half);
    drawPatchGrid(rect, r, sweeps[s].patch);
    maps_ << map;
  }
  plotLayout()->addElement(0, 1, scale);
  columns_ = 0;
  arrange();
}

// The most maps a row, up to all of them, that each keep kMapWidth: four in a row on a wide
// page, two rows of two on a narrower one, one a row on a narrow one. Rows are filled
// evenly (never three over one).
int SweepMaps::columnsFor(int width, int maps) {
  const int room = width - kScaleWidth;
  for (int columns = maps; columns > 1; columns = (columns + 1) / 2)
    if (room / columns >= kMapWidth) return columns;
  return 1;
}

void SweepMaps::arrange() {
  if (!grid_ || maps_.isEmpty()) return;
  const int columns = columnsFor(width(), int(maps_.size()));
  if (columns == columns_) return;
  columns_ = columns;
  grid_->setWrap(columns);
  grid_->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-places the maps row by row
  // A readable map a row, tall enough that its y axis's label stays beside it (the page scrolls).
  setMinimumHeight(kMapHeight * ((int(maps_.size()) + columns - 1) / columns));
  replot();
}

void SweepMaps::resizeEvent(QResizeEvent* event) {
  QCustomPlot::resizeEvent(event);
  arrange();
}

// The model's patch grid in canvas pixels. The canvas centre (where a static
// digit's centre sits, 42 on 84 pixels) is a patch's centre for patches 12 and
// 28, so shifts by whole patches from there put the digit's centre at the
// centre of a grid cell: a relative encoding shows one bright spot per cell.
void SweepMaps::drawPatchGrid(QCPAxisRect* rect, const SweepResult& r, int patch) {
  if (patch <= 0) return;
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  const QPen grid(QColor(255, 255, 255, 110), 1, Qt::DashLine);
  for (double v = patch; v < r.canvas; v += patch) {
    for (bool vertical : {true, false}) {
      auto* line = new QCPItemStraightLine(this);
      line->setClipAxisRect(rect);
      line->setPen(grid);
      for (QCPItemPosition* p : {line->point1, line->point2}) {
        p->setAxes(x, y);
        p->setAxisRect(rect);
      }
      line->point1->setCoords(vertical ? v : 0, vertical ? 0 : v);
      line->point2->setCoords(vertical ? v : 1, vertical ? 1 : v);
    }
  }
  integer_ticks(x, patch);
  integer_ticks(y, patch);
}

}  // namespace translution::ui
