#pragma once
// Live comparison: the slots side by side, each predicting on every canvas change.
#include <QList>
#include <QWidget>

#include "tensor_metatype.h"

namespace translution::ui {

class ModelSlot;
class SlotView;

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(QWidget* parent = nullptr);
  const QList<ModelSlot*>& slots() const { return slots_; }
  const QList<SlotView*>& views() const { return views_; }
  ModelSlot* addSlot();  // up to four
  bool busy() const;     // any slot loading or predicting

 public Q_SLOTS:
  void setCanvas(const at::Tensor& canvas);
  // Opens a file dialog and loads the chosen checkpoint into `slot`.
  void chooseCheckpoint(translution::ui::ModelSlot* slot);

 private:
  QList<ModelSlot*> slots_;
  QList<SlotView*> views_;
  at::Tensor canvas_;
};

}  // namespace translution::ui
