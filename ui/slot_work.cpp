#include "slot_work.h"

#include <algorithm>

#include "bundled_models.h"
#include "method_titles.h"
#include "model_slot.h"

namespace translution::ui {

QList<SlotWork> loaded_slots(const QList<ModelSlot*>& slots) {
  QList<SlotWork> out;
  for (ModelSlot* s : slots)
    if (s->predictor()) out << SlotWork{s->name(), s->predictor()};
  return out;
}

QColor slot_colour(const QString& name) {
  const QColor colours[] = {QColor(230, 120, 30), QColor(31, 119, 180), QColor(44, 160, 44),
                            QColor(148, 103, 189)};
  return colours[std::clamp(name.isEmpty() ? 0 : name[0].unicode() - u'A', 0, 3)];
}

QString slot_title(const SlotWork& s) {
  const QString bundled = bundled_model_title(QString::fromStdString(s.predictor->source()));
  return QObject::tr("%1: %2").arg(s.name,
                                   bundled.isEmpty() ? method_title(s.predictor->config().model) : bundled);
}

QString short_title(const SlotWork& s) {
  return QObject::tr("%1: %2").arg(s.name, model_title(s.predictor->config().model, s.predictor->metadata()));
}

}  // namespace translution::ui
