#include "slot_box.h"

#include <QSignalBlocker>

#include "model_slot.h"

namespace translution::ui {

SlotBox::SlotBox(QWidget* parent) : QComboBox(parent) {}

void SlotBox::setSlots(const QList<ModelSlot*>& slots) {
  ModelSlot* before = shown();
  const QSignalBlocker block(this);
  slots_ = slots;
  clear();
  for (const ModelSlot* s : slots_) addItem(tr("Slot %1").arg(s->name()));
  setCurrentIndex(std::max<int>(0, int(slots_.indexOf(before))));
}

ModelSlot* SlotBox::shown() const { return currentIndex() >= 0 ? slots_.value(currentIndex()) : nullptr; }

}  // namespace translution::ui
