#include "attention_panel.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace translution::ui {

AttentionPanel::AttentionPanel(const QList<ModelSlot*>& slots, QWidget* parent)
    : QWidget(parent), scroll_(new QScrollArea(this)), grid_(new QGridLayout) {
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
  // The views scroll vertically and fit the width: wide enough for two views of readable maps.
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

int AttentionPanel::columns() const { return views_.size() <= 2 ? std::max<int>(1, int(views_.size())) : 2; }

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
  const int n = columns();
  for (int i = 0; i < views_.size(); ++i) grid_->addWidget(views_[i], i / n, i % n);
  // Columns and rows left over from more slots keep no stretch (and so no space).
  for (int c = 0; c < grid_->columnCount(); ++c) grid_->setColumnStretch(c, c < n ? 1 : 0);
  for (int r = 0; r < grid_->rowCount(); ++r)
    grid_->setRowStretch(r, r < (views_.size() + n - 1) / n ? 1 : 0);
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
