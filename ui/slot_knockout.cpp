#include "slot_knockout.h"

#include <QFileInfo>

#include "model_slot.h"
#include "slot_work.h"

namespace translution::ui {

namespace {

// A file's or a bundled model's base name; a model in memory by its label.
QString model_name(const QString& source) {
  return source.contains('/') || source.endsWith(".ckpt") ? QFileInfo(source).completeBaseName() : source;
}

}  // namespace

QString knocked_out_label(const QString& source, const OffsetKnockout& knockout) {
  const QString name = model_name(source);
  const int n = int(knockout.offsets.size());
  const QString offsets = n == 1 ? QObject::tr("1 offset") : QObject::tr("%1 offsets").arg(n);
  if (knockout.offsets.empty()) return QObject::tr("%1 (CLS matrices knocked out)").arg(name);
  return QObject::tr("%1 (%2%3 knocked out)")
      .arg(name, offsets, knockout.any_cls() ? QObject::tr(" + CLS") : QString());
}

// The copy, with the metadata a knocked-out model can still claim: not the
// original's test accuracy, which the copy no longer has.
SlotKnockout::Built SlotKnockout::build(const std::shared_ptr<const Predictor>& base,
                                        const OffsetKnockout& knockout) {
  try {
    Built out;
    Checkpoint c;
    c.config = base->config();
    c.model = knocked_out_copy(base->model(), knockout, &out.matrices);
    c.metadata = base->metadata();
    for (const char* stale : {"test_accuracy", "test_accuracy_subset", "test_samples"})
      c.metadata.erase(stale);
    c.metadata["knockout"] = knockout.describe();
    out.predictor =
        std::make_shared<const Predictor>(base->engine(), std::move(c), base->source(), base->device());
    return out;
  } catch (const std::exception& e) {
    return {nullptr, 0, QString::fromStdString(e.what())};
  }
}

SlotKnockout::SlotKnockout(QObject* parent) : QObject(parent) {}

void SlotKnockout::watch(ModelSlot* slot) {
  if (watched_.contains(slot)) return;
  watched_.insert(slot);
  // Another model loaded into the slot (the picker, training, an experiment) ends the knockout:
  // restoring would otherwise bring back a model the user has since replaced.
  connect(slot, &ModelSlot::loaded, this, [this, slot] {
    const auto it = originals_.find(slot);
    if (it != originals_.end() && slot->predictor() != it->knocked && slot->predictor() != it->predictor) {
      originals_.erase(it);
      Q_EMIT restored(slot);
    }
  });
  connect(slot, &QObject::destroyed, this, [this, slot] {
    originals_.remove(slot);
    generation_.remove(slot);
    watched_.remove(slot);
  });
}

void SlotKnockout::apply(ModelSlot* slot, const OffsetKnockout& knockout) {
  const auto it = originals_.constFind(slot);
  const Original original = it != originals_.constEnd()
                                ? *it
                                : Original{slot->predictor(), nullptr, slot->source(), slot->note(), {}};
  if (!original.predictor) {
    Q_EMIT failed(slot, tr("Slot %1 has no model to knock out.").arg(slot->name()));
    return;
  }
  watch(slot);
  const int generation = ++generation_[slot];
  ++busy_;
  run_async<Built>(
      this, [base = original.predictor, knockout] { return build(base, knockout); },
      [this, slot, original, knockout, generation](const Built& built) {
        --busy_;
        putIn(slot, original, knockout, generation, built);
        Q_EMIT workDone();
      });
}

void SlotKnockout::putIn(ModelSlot* slot, Original original, const OffsetKnockout& knockout, int generation,
                         const Built& built) {
  if (generation != generation_.value(slot)) return;  // a newer apply or a restore came since
  if (!built.predictor) return Q_EMIT failed(slot, built.error);
  original.knocked = built.predictor;
  original.what =
      tr("%1; %2 matrices replaced").arg(QString::fromStdString(knockout.describe())).arg(built.matrices);
  const QString label = knocked_out_label(original.source, knockout);
  const QString note = tr("A copy of %1 with %2 (Restore on the Offset weights tab gives the model back)")
                           .arg(model_name(original.source), original.what);
  originals_[slot] = original;
  if (const QString why = slot->setPredictor(built.predictor, label, note); !why.isEmpty()) {
    originals_.remove(slot);
    return Q_EMIT failed(slot, why);
  }
  Q_EMIT applied(slot);
}

void SlotKnockout::restore(ModelSlot* slot) {
  ++generation_[slot];  // a copy still being made is not put in
  const auto it = originals_.find(slot);
  if (it == originals_.end()) return;
  const Original original = *it;
  originals_.erase(it);
  slot->setPredictor(original.predictor, original.source, original.note);
  Q_EMIT restored(slot);
}

QString SlotKnockout::describe(const ModelSlot* slot) const {
  const auto it = originals_.constFind(slot);
  return it == originals_.constEnd() ? QString() : it->what;
}

}  // namespace translution::ui
