#include "attention_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include "reflow_layout.h"

namespace translution::ui {

AttentionPanel::AttentionPanel(const QList<ModelSlot*>& slots, QWidget* parent)
    : QWidget(parent), scroll_(new QScrollArea(this)), grid_(new ReflowLayout(2)) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  auto* hint = new QLabel(
      tr("Query: pick a patch with the Query tool (Q) on the canvas or click any map here."), this);
  hint->setWordWrap(true);
  cls_ = new QPushButton(tr("Query CLS"), this);
  cls_->setObjectName("queryCls");
  cls_->setToolTip(tr("Show what the CLS token (the one the classifier reads) attends to"));
  controls->addWidget(hint, 1);
  controls->addWidget(cls_);
  layout->addLayout(controls);
  // The views scroll vertically and fit the width: two side by side where both keep
  // readable maps, else one above the other.
  auto* content = new QWidget(scroll_);
  content->setLayout(grid_);
  grid_->setContentsMargins(0, 0, 0, 0);
  scroll_->setWidget(content);
  scroll_->setWidgetResizable(true);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  scroll_->setFrameShape(QFrame::NoFrame);
  layout->addWidget(scroll_, 1);
  setSlots(slots);
  connect(cls_, &QPushButton::clicked, this, &AttentionPanel::setClsQuery);
}

int AttentionPanel::columns() const { return grid_->columnsFor(scroll_->viewport()->width()); }

void AttentionPanel::setSlots(const QList<ModelSlot*>& slots) {
  QList<AttentionView*> kept;
  for (AttentionView* v : views_) {
    grid_->removeWidget(v);
    if (slots.contains(v->slot()))
      kept << v;
    else
      delete v;  // its slot is going away
  }
  views_.clear();
  for (ModelSlot* slot : slots) {
    AttentionView* view = nullptr;
    for (AttentionView* v : kept)
      if (v->slot() == slot) view = v;
    if (!view) {
      view = new AttentionView(slot, grid_->parentWidget());
      view->setQuery(query_);
      connect(view, &AttentionView::queryPicked, this, &AttentionPanel::setQuery);
    }
    views_ << view;
  }
  for (AttentionView* v : views_) grid_->addWidget(v);
  // Tab order: the button, then each view's controls in reading order.
  QWidget* previous = cls_;
  for (AttentionView* v : views_)
    for (QWidget* w : v->findChildren<QComboBox*>()) {
      setTabOrder(previous, w);
      previous = w;
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
