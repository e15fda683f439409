#pragma once
// Class probabilities as a bar chart (QCustomPlot); the predicted class stands out.
#include <vector>

#include "qcustomplot_include.h"

namespace translution::ui {

class ProbabilityChart : public QCustomPlot {
  Q_OBJECT
 public:
  explicit ProbabilityChart(QWidget* parent = nullptr);
  void setProbabilities(const std::vector<double>& probabilities, int predicted);
  void clearProbabilities();
  std::vector<double> probabilities() const { return values_; }

 private:
  QCPBars* bars_;
  QCPBars* best_;
  std::vector<double> values_;
};

}  // namespace translution::ui
