#pragma once
// The attention view for every comparison slot, sharing one query token: picked
// with the canvas's Query tool, by clicking any attention map, or CLS. Two views
// sit side by side where both keep readable maps, else one above the other; three
// or four wrap into rows. The views scroll down inside the panel, so they keep
// readable maps without making the window larger.
#include <QList>
#include <QWidget>

#include "attention_view.h"

class QScrollArea;

namespace translution::ui {

class ModelSlot;
class ReflowLayout;

class AttentionPanel : public QWidget {
  Q_OBJECT
 public:
  AttentionPanel(const QList<ModelSlot*>& slots, QWidget* parent = nullptr);
  const QList<AttentionView*>& views() const { return views_; }
  const AttentionQuery& query() const { return query_; }
  QScrollArea* scrollArea() const { return scroll_; }
  // Views per row at the panel's present width: two where they fit, else one.
  int columns() const;

 public Q_SLOTS:
  void setQuery(const translution::ui::AttentionQuery& query);
  void setQueryPatch(int row, int col, int patch);  // a patch of the canvas's grid
  void setClsQuery();

 public:
  // One view per slot, in the slots' order (they change as slots are added and removed).
  void setSlots(const QList<translution::ui::ModelSlot*>& slots);

 Q_SIGNALS:
  void queryChanged(const translution::ui::AttentionQuery& query);

 private:
  QScrollArea* scroll_;
  ReflowLayout* grid_;
  class QPushButton* cls_;
  QList<AttentionView*> views_;
  AttentionQuery query_;
};

}  // namespace translution::ui
