#pragma once
// What one comparison slot shows: its model (kind, preset, parameters, device,
// what it was trained on), the predicted class and the probability chart, and
// controls to pick another model, switch device or remove the slot. A blank canvas
// gets no predicted class: the chart still shows the model's output, all in grey.
#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;

namespace translution::ui {

class ModelPicker;
class ModelSlot;
class ProbabilityChart;

class SlotView : public QWidget {
  Q_OBJECT
 public:
  SlotView(ModelSlot* slot, QWidget* parent = nullptr);
  ModelSlot* slot() const { return slot_; }
  ProbabilityChart* chart() const { return chart_; }
  ModelPicker* picker() const { return picker_; }
  void setRemovable(bool removable);
  QString predictionText() const;
  QString confidenceText() const;

 Q_SIGNALS:
  void loadRequested(translution::ui::ModelSlot* slot);
  void removeRequested(translution::ui::ModelSlot* slot);

 private:
  void showModel();
  void showPrediction();
  void showError(const QString& message);

  ModelSlot* slot_;
  QLabel* title_;
  QLabel* details_;
  QLabel* predicted_;
  QLabel* confidence_;
  QLabel* timing_;
  QComboBox* device_;
  ModelPicker* picker_;
  QPushButton* remove_;
  ProbabilityChart* chart_;
};

}  // namespace translution::ui
