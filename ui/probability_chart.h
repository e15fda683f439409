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
  // Too narrow for the y axis's label beside ten class labels (four slots on a small or
  // scaled screen): the label goes (the tooltip says what the axis is) and the ticks thin out.
  bool narrow() const { return narrow_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void setNarrow(bool narrow);

  QCPBars* bars_;
  QCPBars* best_;
  std::vector<double> values_;
  bool narrow_ = false;
};

}  // namespace translution::ui
