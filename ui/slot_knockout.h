#pragma once
// Offset knockout for the studio's slots: a slot predicts with a knocked-out copy
// of its model (infer/offset_knockout.h), and gets its own model back. The copy
// is made off the GUI thread (a Translution model's banks are megabytes); the
// slot's own predictor is kept untouched, so restoring gives back exactly the
// model, and the predictions, it had.
#include <memory>

#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>

#include "infer/offset_knockout.h"
#include "infer/predictor.h"

namespace translution::ui {

class ModelSlot;

// "translution (12 offsets knocked out)", from the slot's own label (a file's or
// resource's name without its folder and extension, else the label as it is).
QString knocked_out_label(const QString& source, const OffsetKnockout& knockout);

class SlotKnockout : public QObject {
  Q_OBJECT
 public:
  explicit SlotKnockout(QObject* parent = nullptr);

  // Knocks out the slot's own model (its original one, when a knockout already
  // stands) into a copy the slot then predicts with. Emits applied() or failed().
  void apply(ModelSlot* slot, const OffsetKnockout& knockout);
  // Gives the slot its own model back (nothing when none is knocked out).
  void restore(ModelSlot* slot);
  bool knockedOut(const ModelSlot* slot) const { return originals_.contains(slot); }
  // The slot's own model while a knocked-out copy stands in for it; null otherwise.
  std::shared_ptr<const Predictor> original(const ModelSlot* slot) const {
    return originals_.contains(slot) ? originals_.value(slot).predictor : nullptr;
  }
  // What stands on the slot, for its status line.
  QString describe(const ModelSlot* slot) const;
  bool busy() const { return busy_ > 0; }

 Q_SIGNALS:
  void applied(ModelSlot* slot);
  void failed(ModelSlot* slot, const QString& message);
  void restored(ModelSlot* slot);
  void workDone();  // a copy was finished (put in, failed or outdated): busy() may have changed

 private:
  struct Original {
    std::shared_ptr<const Predictor> predictor, knocked;
    QString source;  // the label the slot had
    QString note;    // and its note (ModelSlot::note)
    QString what;    // the knockout, described
  };
  struct Built {  // a knocked-out copy, made on a worker thread
    std::shared_ptr<const Predictor> predictor;
    int64_t matrices = 0;
    QString error;
  };
  static Built build(const std::shared_ptr<const Predictor>& base, const OffsetKnockout& knockout);
  // Puts the built copy of `original` (its predictor, source and note) into the slot.
  void putIn(ModelSlot* slot, Original original, const OffsetKnockout& knockout, int generation,
             const Built& built);
  void watch(ModelSlot* slot);

  QHash<const ModelSlot*, Original> originals_;
  QSet<const ModelSlot*> watched_;
  QHash<const ModelSlot*, int> generation_;  // a newer apply or restore makes a running copy stale
  int busy_ = 0;
};

}  // namespace translution::ui
