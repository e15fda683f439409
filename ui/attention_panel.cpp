#include "attention_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace translution::ui {

AttentionPanel::AttentionPanel(const QList<ModelSlot*>& slots, QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  auto* hint = new QLabel(tr("Query: pick a patch with the Query tool (Q) on the canvas or click any map here."), this);
  hint->setWordWrap(true);
  auto* cls = new QPushButton(tr("Query CLS"), this);
  cls->setToolTip(tr("Show what the CLS token (the one the classifier reads) attends to"));
  controls->addWidget(hint, 1);
  controls->addWidget(cls);
  layout->addLayout(controls);
  row_ = new QHBoxLayout;
  layout->addLayout(row_, 1);
  setSlots(slots);
  connect(cls, &QPushButton::clicked, this, &AttentionPanel::setClsQuery);
}

void AttentionPanel::setSlots(const QList<ModelSlot*>& slots) {
  QList<AttentionView*> kept;
  for (AttentionView* v : views_) {
    if (slots.contains(v->slot())) kept << v;
    else delete v;  // its slot is going away
  }
  views_.clear();
  for (ModelSlot* slot : slots) {
    AttentionView* view = nullptr;
    for (AttentionView* v : kept)
      if (v->slot() == slot) view = v;
    if (!view) {
      view = new AttentionView(slot, this);
      view->setQuery(query_);
      connect(view, &AttentionView::queryPicked, this, &AttentionPanel::setQuery);
    }
    row_->removeWidget(view);
    row_->addWidget(view, 1);
    views_ << view;
  }
}

void AttentionPanel::setQuery(const AttentionQuery& query) {
  query_ = query;
  for (AttentionView* v : views_) v->setQuery(query);
  Q_EMIT queryChanged(query);
}

void AttentionPanel::setQueryPatch(int row, int col, int patch) {
  AttentionQuery q;
  q.cls = false;
  q.x = (col + 0.5) * patch;
  q.y = (row + 0.5) * patch;
  setQuery(q);
}

void AttentionPanel::setClsQuery() { setQuery(AttentionQuery{}); }

}  // namespace translution::ui
