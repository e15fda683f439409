#include "probability_chart.h"

#include "plot_export.h"

namespace translution::ui {

ProbabilityChart::ProbabilityChart(QWidget* parent) : QCustomPlot(parent) {
  bars_ = new QCPBars(xAxis, yAxis);
  best_ = new QCPBars(xAxis, yAxis);
  bars_->setPen(Qt::NoPen);
  bars_->setBrush(QColor(120, 144, 176));
  best_->setPen(Qt::NoPen);
  best_->setBrush(QColor(230, 120, 30));
  bars_->setWidth(0.7);
  best_->setWidth(0.7);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int k = 0; k < 10; ++k) ticker->addTick(k, QString::number(k));
  xAxis->setTicker(ticker);
  xAxis->setRange(-0.6, 9.6);
  xAxis->grid()->setVisible(false);
  yAxis->setRange(0, 1);
  yAxis->setLabel(tr("probability"));
  setMinimumSize(120, 120);
  setProperty("readableMinimum", QSize(120, 120));  // ten bars and their labels
  setToolTip(tr("Softmax probability of each class (empty while there is nothing to classify)"));
  enable_plot_export(this);
}

void ProbabilityChart::setProbabilities(const std::vector<double>& p, int predicted) {
  values_ = p;
  QVector<double> keys, rest, top;
  for (int k = 0; k < int(p.size()); ++k) {
    keys << k;
    rest << (k == predicted ? 0.0 : p[size_t(k)]);
    top << (k == predicted ? p[size_t(k)] : 0.0);
  }
  bars_->setData(keys, rest, true);
  best_->setData(keys, top, true);
  replot(QCustomPlot::rpQueuedReplot);
}

void ProbabilityChart::clearProbabilities() {
  values_.clear();
  bars_->data()->clear();
  best_->data()->clear();
  replot(QCustomPlot::rpQueuedReplot);
}

// Ten class labels need about ten digits and their gaps; the y axis's ticks and label take
// some six digits more; the margins the rest.
void ProbabilityChart::resizeEvent(QResizeEvent* event) {
  const int digit = fontMetrics().horizontalAdvance(QLatin1Char('0'));
  setNarrow(event->size().width() < 21 * digit);
  QCustomPlot::resizeEvent(event);
}

void ProbabilityChart::setNarrow(bool narrow) {
  if (narrow == narrow_) return;
  narrow_ = narrow;
  yAxis->setLabel(narrow ? QString() : tr("probability"));
  if (narrow) {
    auto halves = QSharedPointer<QCPAxisTickerFixed>::create();
    halves->setTickStep(0.5);
    yAxis->setTicker(halves);
  } else {
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  }
}

double ProbabilityChart::drawnTotal() const {
  double total = 0;
  for (const QCPBars* b : {bars_, best_})
    for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it) total += it->value;
  return total;
}

}  // namespace translution::ui
