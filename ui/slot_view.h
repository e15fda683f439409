#pragma once
// What one comparison slot shows: its model (kind, preset, parameters, device,
// what it was trained on), the predicted class and the probability chart, and
// controls to pick another model, switch device or remove the slot. A blank
// canvas gets no prediction: no class, no bars. Everything elides or wraps to the
// width it gets, so four slots fit side by side in a narrow window.
#include <QList>
#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;

namespace translution::ui {

class ElidedLabel;
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
  QString titleText() const;  // whole, even where the label elides it
  QString detailsText() const;
  QString predictionText() const;
  QString confidenceText() const;
  // The controls in the order Tab visits them: picker, device, remove.
  QList<QWidget*> focusOrder() const;
  // The height the details need at their present width, and the height to give them: the
  // comparison gives every slot the tallest one's, so that the charts start level.
  int detailsNeed() const;
  void setDetailsHeight(int height);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 public Q_SLOTS:
  // The canvas is empty: no class and no bars, whatever the last prediction was.
  void showBlankCanvas();

 Q_SIGNALS:
  void loadRequested(translution::ui::ModelSlot* slot);
  void removeRequested(translution::ui::ModelSlot* slot);
  // The details' text or width changed, so perhaps the height they need.
  void detailsChanged();

 private:
  void showModel();
  void showPrediction();
  void showError(const QString& message);
  void clearPrediction();

  ModelSlot* slot_;
  ElidedLabel* title_;
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
