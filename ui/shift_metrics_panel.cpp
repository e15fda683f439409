#include "shift_metrics_panel.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "fitted_table.h"
#include "model_slot.h"
#include "plot_export.h"
#include "plot_legend.h"
#include "reflow_layout.h"
#include "util/error.h"

namespace translution::ui {
namespace {

QSpinBox* spin_box(QWidget* parent, int low, int high, int value, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setRange(low, high);
  box->setValue(value);
  box->setToolTip(tip);
  return box;
}

QString percent(double share) { return QString::number(100 * share, 'f', 1) + "%"; }

}  // namespace

ShiftMetricsPanel::ShiftMetricsPanel(QString data_dir, const QList<ModelSlot*>& slots, QWidget* parent)
    : QGroupBox(tr("Shift metrics: consistency, worst case, equivariance per layer"), parent),
      data_dir_(std::move(data_dir)) {
  consistency_digits_ = spin_box(this, 1, 10000, 1000,
                                 tr("Test digits for consistency: each is placed twice, at two "
                                    "random places, and a shift apart at a random place and direction"));
  worst_digits_ = spin_box(this, 1, 10000, 100, tr("Test digits placed at every position of the grid"));
  stride_ = spin_box(this, 1, 28, 4, tr("Pixels between the worst case's positions"));
  equivariance_digits_ = spin_box(this, 1, 10000, 100, tr("Test digits for the equivariance error"));
  measure_ = new QPushButton(tr("Measure the slots"), this);
  measure_->setToolTip(
      tr("Every slot's model: consistency between random places and under 1-px and whole-patch "
         "shifts, the worst case over "
         "the grid, and the equivariance error of every layer"));
  progress_ = new QProgressBar(this);
  progress_->setToolTip(tr("How far the measurement is, over all slots"));
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("Not measured yet"));
  table_ = new FittedTable(0, 7, this);
  table_->setHorizontalHeaderLabels({tr("Slot"), tr("Same class\nrandom places"),
                                     tr("Same class\n1 px apart"), tr("Same class\n1 patch apart"),
                                     tr("Right at\nevery position"), tr("Mean\naccuracy"),
                                     tr("Mean\nP(true)")});
  table_->setToolTip(
      tr("Consistency: the share of digits whose two copies, at two random places or a shift apart, "
         "get the same class (Zhang, 2019); 1 px: its complement is the flip rate (Azulay & Weiss, 2019). "
         "Right everywhere: the share of digits read correctly at every position of the grid "
         "(the worst case); mean accuracy and P(true) average over the grid"));
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // As wide as its columns and as tall as its rows: a frame stretched past them would read as
  // rows missing. On a page narrower than its columns the table alone scrolls sideways, so
  // that the page need not.
  table_->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Maximum);
  table_->setMinimumHeight(100);
  plot_ = new QCustomPlot(this);
  plot_->setToolTip(
      tr("Relative L2 distance between the tokens of a digit moved by one patch and the moved tokens "
         "of the digit, layer by layer: 0 means the layer is equivariant to that shift; dashed: the "
         "CLS token. Right-click to save the plot"));
  plot_->xAxis->setLabel(tr("layer"));
  plot_->yAxis->setLabel(tr("equivariance error"));
  plot_->setMinimumSize(280, 200);  // an axis of every layer, "embed" to the last, unclipped
  plot_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Expanding);  // the page's height to spare
  enable_plot_export(plot_);
  note_ = new QLabel(
      tr("Measure the slots to compare how their answers and their tokens follow a moved digit."), this);
  note_->setWordWrap(true);
  note_->setToolTip(tr("What the table and the plot show"));
  // What the answers do (consistency, the worst case and its stride) in one row, or fewer a row
  // on a narrow page; what the tokens do (equivariance) beneath; the table, then the plot as
  // wide as the page: a line per slot over the layers reads best wide, and beside the table
  // it would leave a blank beneath the table's rows.
  const QList<QPair<QString, QSpinBox*>> boxes{{tr("Consistency digits"), consistency_digits_},
                                               {tr("Worst-case digits"), worst_digits_},
                                               {tr("Stride"), stride_}};
  auto* answers = new ReflowLayout(int(boxes.size()));
  answers->setColumnGap(16);
  for (const auto& [label, box] : boxes) {
    auto* pair = new QHBoxLayout;
    pair->addWidget(new QLabel(label, this));
    pair->addWidget(box);
    pair->addStretch(1);
    answers->addLayout(pair);
  }
  auto* tokens = new QHBoxLayout;
  tokens->addWidget(new QLabel(tr("Equivariance digits"), this));
  tokens->addWidget(equivariance_digits_);
  tokens->addWidget(measure_);
  tokens->addStretch(1);
  auto* answer_row = new QHBoxLayout;
  answer_row->addLayout(answers);
  answer_row->addStretch(1);  // the spare width after the controls, not between them
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(answer_row);
  layout->addLayout(tokens);
  layout->addWidget(progress_);
  layout->addWidget(table_, 0, Qt::AlignLeft);
  layout->addWidget(plot_, 1);
  layout->addWidget(note_);
  connect(measure_, &QPushButton::clicked, this, &ShiftMetricsPanel::measure);
  setSlots(slots);
}

void ShiftMetricsPanel::setSlots(const QList<ModelSlot*>& slots) { slots_ = slots; }

QString ShiftMetricsPanel::note() const { return note_->text(); }

void ShiftMetricsPanel::setSizes(int consistency_digits, int worst_case_digits, int stride,
                                 int equivariance_digits) {
  consistency_digits_->setValue(consistency_digits);
  worst_digits_->setValue(worst_case_digits);
  stride_->setValue(stride);
  equivariance_digits_->setValue(equivariance_digits);
}

ShiftMetricsOptions ShiftMetricsPanel::options() const {
  ShiftMetricsOptions o;
  o.consistency_digits = consistency_digits_->value();
  o.worst_case_digits = worst_digits_->value();
  o.stride = stride_->value();
  o.equivariance.digits = equivariance_digits_->value();
  return o;
}

void ShiftMetricsPanel::measure() {
  const QList<SlotWork> work = loaded_slots(slots_);
  if (work.isEmpty()) {
    note_->setText(tr("Load a model into a slot first."));
    return;
  }
  const NewestRun::Ticket run = run_.start();  // a run still going is superseded
  const int generation = run.generation;
  ++busy_;
  measure_->setEnabled(false);
  showProgress(0, 1);
  struct Out {
    QList<Row> rows;
    QString error;
  };
  QPointer<ShiftMetricsPanel> self = this;
  run_async<Out>(
      this,
      [self, generation, work, o = options(), dir = data_dir_.toStdString(), cancel = run.stop] {
        Out out;
        try {
          const MnistDigits test = load_mnist(dir, Split::Test);
          for (int s = 0; s < work.size(); ++s) {
            auto progress = [&, s](int64_t done, int64_t total) {
              if (*cancel) throw Error("cancelled");  // ends the measurement between batches
              QMetaObject::invokeMethod(qApp, [self, generation, s, n = work.size(), done, total] {
                if (self && self->run_.current(generation)) self->showProgress(s * total + done, n * total);
              });
            };
            const Predictor& p = *work[s].predictor;
            out.rows << Row{work[s], shift_metrics(p.engine(), p.model(), test, o, p.device(), progress)};
          }
        } catch (const std::exception& e) {
          out.error = QString::fromStdString(e.what()).section('\n', 0, 0);
        }
        return out;
      },
      [this, generation](const Out& out) {
        --busy_;
        if (!run_.current(generation)) return;  // a newer measurement runs
        if (out.error.isEmpty()) showRows(out.rows);
        finish(out.error);
      });
}

void ShiftMetricsPanel::showProgress(int64_t done, int64_t total) {
  progress_->setFormat(tr("Measuring: %p%"));
  progress_->setRange(0, 1000);
  progress_->setValue(int(1000 * done / std::max<int64_t>(total, 1)));
}

void ShiftMetricsPanel::showRows(const QList<Row>& rows) {
  table_->setRowCount(rows.size());
  for (int r = 0; r < rows.size(); ++r) {
    const ShiftMetrics& m = rows[r].metrics;
    const QStringList cells{short_title(rows[r].slot),
                            percent(m.random.consistency),
                            percent(m.one_pixel.consistency),
                            percent(m.whole_patch.consistency),
                            percent(m.worst_case.worst_case),
                            percent(m.worst_case.mean_accuracy),
                            QString::number(m.worst_case.true_probability, 'f', 3)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setTextAlignment(c == 0 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
      if (c == 0) item->setForeground(slot_colour(rows[r].slot.name));
      table_->setItem(r, c, item);
    }
  }
  plotLayers(rows);
  const ShiftMetrics& first = rows.front().metrics;
  note_->setText(
      tr("Consistency over %1 digits (whole patch: %2 px); worst case over %3 positions every %4 px, %5 "
         "digits. The plot compares a digit moved by one patch with its tokens moved one place, over the "
         "tokens at least one patch from the border; a global model sees other offsets at the border, "
         "so none is exactly equivariant.")
          .arg(first.one_pixel.digits)
          .arg(first.whole_patch.shift)
          .arg(first.worst_case.positions)
          .arg(first.worst_case.stride)
          .arg(first.worst_case.digits));
}

void ShiftMetricsPanel::plotLayers(const QList<Row>& rows) {
  plot_->clearGraphs();
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  double top = 0;
  int layers = 0;
  for (const Row& row : rows) {
    QVector<double> x, tokens, cls;
    for (size_t l = 0; l < row.metrics.equivariance.size(); ++l) {
      const LayerEquivariance& e = row.metrics.equivariance[l];
      x << double(l);
      tokens << e.tokens;
      cls << e.cls;
      top = std::max({top, e.tokens, e.cls});
      ticker->addTick(double(l), l == 0 ? tr("embed") : QString::number(l));
    }
    layers = std::max(layers, int(x.size()));
    const QColor colour = slot_colour(row.slot.name);
    QCPGraph* g = plot_->addGraph();
    g->setName(short_title(row.slot));
    g->setPen(QPen(colour, 2));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
    g->setData(x, tokens);
    QCPGraph* c = plot_->addGraph();
    c->setName(tr("%1, CLS").arg(row.slot.name));
    c->setPen(QPen(colour, 1.5, Qt::DashLine));
    c->setData(x, cls);
    c->removeFromLegend();  // one entry per slot; the axis label says what dashed is
  }
  plot_->xAxis->setTicker(ticker);
  plot_->xAxis->setLabel(tr("layer (dashed: the CLS token)"));
  plot_->xAxis->setRange(-0.3, std::max(layers, 1) - 0.7);
  plot_->yAxis->setRange(0, std::max(top * 1.1, 0.05));
  show_legend_beneath(plot_, 2);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ShiftMetricsPanel::finish(const QString& error) {
  measure_->setEnabled(true);
  progress_->setRange(0, 1);
  progress_->setValue(error.isEmpty() ? 1 : 0);
  progress_->setFormat(error.isEmpty() ? tr("Done") : tr("Measurement failed"));
  if (!error.isEmpty())
    note_->setText(tr("Measurement failed: %1").arg(error));
  else
    Q_EMIT measured();
}

}  // namespace translution::ui
