#pragma once
// Class probabilities as a bar chart (QCustomPlot); the predicted class stands
// out. Cleared, it shows no bars at all: a chart with bars always means the
// model's answer for the canvas on screen.
#include <vector>

#include "qcustomplot_include.h"

namespace translution::ui {

class ProbabilityChart : public QCustomPlot {
  Q_OBJECT
 public:
  explicit ProbabilityChart(QWidget* parent = nullptr);
  // predicted: the class drawn in the highlight colour, -1 for none.
  void setProbabilities(const std::vector<double>& probabilities, int predicted);
  void clearProbabilities();
  std::vector<double> probabilities() const { return values_; }
  // The sum of every bar's height as drawn (0 when cleared).
  double drawnTotal() const;

 private:
  QCPBars* bars_;
  QCPBars* best_;
  std::vector<double> values_;
};

}  // namespace translution::ui
