#pragma once
// The model picker on each comparison slot: the bundled models by readable name,
// the checkpoint files opened before, and "Open file…". Choosing an entry loads it
// into the slot. The picker follows the slot, whatever loads it (the demo, the
// training panel, a failed load that left the old model), so it always names what
// the slot holds. A name longer than the box is elided, whole in the tooltip; the
// list that drops down is as wide as its longest entry.
#include <QComboBox>

namespace translution::ui {

class ModelSlot;

class ModelPicker : public QComboBox {
  Q_OBJECT
 public:
  explicit ModelPicker(ModelSlot* slot, QWidget* parent = nullptr);
  // What each entry loads (bundled resource paths, then files), in menu order.
  QStringList sources() const;
  // Selects the entry for `source` and loads it into the slot; false if there is none.
  bool choose(const QString& source);
  // The text the closed box shows: the current entry, elided to the room it has.
  QString shownText() const;

  void showPopup() override;

 Q_SIGNALS:
  void openFileRequested(translution::ui::ModelSlot* slot);

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void activate(int index);
  void describe();  // the tooltip: the whole name of what is chosen, then what the box does
  void followSlot();
  int indexOfSource(const QString& source) const;
  int addFileEntry(const QString& path);

  ModelSlot* slot_;
};

// Files opened into any slot, newest first (remembered between sessions).
QStringList recent_checkpoints();
void remember_checkpoint(const QString& path);

}  // namespace translution::ui
