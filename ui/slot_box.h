#pragma once
// A combo box of the comparison's slots ("Slot A", "Slot B", ...): the choice of
// whose model a panel shows. It follows the comparison as slots come and go,
// keeping the slot shown where it is still there.
#include <QComboBox>
#include <QList>

namespace translution::ui {

class ModelSlot;

class SlotBox : public QComboBox {
  Q_OBJECT
 public:
  explicit SlotBox(QWidget* parent = nullptr);
  // Lists `slots`, the one shown before still shown where it is among them (else the
  // first), without emitting currentIndexChanged.
  void setSlots(const QList<ModelSlot*>& slots);
  const QList<ModelSlot*>& slots() const { return slots_; }
  ModelSlot* shown() const;  // null while no slot is listed

 private:
  QList<ModelSlot*> slots_;
};

}  // namespace translution::ui
