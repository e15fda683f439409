#pragma once
// Live comparison: two to four slots side by side, each predicting on every
// canvas change. Slots can be added and removed; every other panel follows
// slotsChanged(). Each slot elides and wraps what it shows, so four fit side by
// side in a narrow window; in a narrower one they sit two by two (the page scrolls
// down, never sideways), and removing slots gives the width back.
#include <QList>
#include <QWidget>

#include "tensor_metatype.h"
#include "util/engine_options.h"

class QPushButton;

namespace translution::ui {

class ModelSlot;
class ReflowLayout;
class SlotView;

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMinSlots = 2, kMaxSlots = 4;

  // Its slots' models predict under `engine`.
  explicit ComparePanel(const EngineOptions& engine, QWidget* parent = nullptr);
  const QList<ModelSlot*>& slots() const { return slots_; }
  const QList<SlotView*>& views() const { return views_; }
  SlotView* viewOf(const ModelSlot* slot) const;
  bool busy() const;  // any slot loading or predicting

 public Q_SLOTS:
  // Adds a slot named by the first free letter (A-D); nullptr when there are four.
  translution::ui::ModelSlot* addSlot();
  // Removes `slot` unless only two are left; the other slots keep their names.
  bool removeSlot(translution::ui::ModelSlot* slot);
  void setCanvas(const at::Tensor& canvas);
  // Opens a file dialog and loads the chosen checkpoint into `slot`.
  void chooseCheckpoint(translution::ui::ModelSlot* slot);
  // Loads `path` into `slot`; a failure gets a dialog naming the file (the slot keeps its model).
  void loadFile(translution::ui::ModelSlot* slot, const QString& path);

 Q_SIGNALS:
  void slotsChanged();

 private:
  void updateControls();
  void alignDetails();

  EngineOptions engine_;
  QList<ModelSlot*> slots_;
  QList<SlotView*> views_;
  ReflowLayout* row_;
  QPushButton* add_;
  at::Tensor canvas_;
};

}  // namespace translution::ui
