#include "compare_panel.h"

#include <algorithm>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

#include "model_picker.h"
#include "model_slot.h"
#include "reflow_layout.h"
#include "slot_view.h"

namespace translution::ui {

ComparePanel::ComparePanel(const EngineOptions& engine, QWidget* parent)
    : QWidget(parent), engine_(engine), row_(new ReflowLayout(kMaxSlots)), add_(new QPushButton(this)) {
  add_->setText(tr("+ Add slot"));
  add_->setToolTip(tr("Compare up to %1 models side by side").arg(kMaxSlots));
  add_->setObjectName("addSlot");
  auto* bar = new QHBoxLayout;
  bar->addStretch(1);
  bar->addWidget(add_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addLayout(row_, 1);
  connect(add_, &QPushButton::clicked, this, &ComparePanel::addSlot);
}

SlotView* ComparePanel::viewOf(const ModelSlot* slot) const {
  const qsizetype i = slots_.indexOf(const_cast<ModelSlot*>(slot));
  return i < 0 ? nullptr : views_[i];
}

ModelSlot* ComparePanel::addSlot() {
  if (slots_.size() >= kMaxSlots) return nullptr;
  QChar letter = 'A';
  int position = 0;  // slots stay in letter order
  for (; position < slots_.size() && slots_[position]->name() == QString(letter); ++position)
    letter = QChar(letter.unicode() + 1);
  auto* slot = new ModelSlot(engine_, QString(letter), this);
  auto* view = new SlotView(slot, this);
  slots_.insert(position, slot);
  views_.insert(position, view);
  row_->insertWidget(position, view);  // equal stretch: the slots share the width evenly
  connect(view, &SlotView::loadRequested, this, &ComparePanel::chooseCheckpoint);
  connect(view, &SlotView::removeRequested, this, &ComparePanel::removeSlot);
  connect(view, &SlotView::detailsChanged, this, &ComparePanel::alignDetails, Qt::QueuedConnection);
  // A newly loaded model predicts the canvas the others already show; its choice is remembered.
  connect(slot, &ModelSlot::loaded, this, [this, slot] {
    if (canvas_.defined()) slot->request(canvas_);
    if (QFile::exists(slot->source())) QSettings().setValue("compare/slot" + slot->name(), slot->source());
  });
  if (canvas_.defined()) slot->request(canvas_);
  updateControls();
  Q_EMIT slotsChanged();
  return slot;
}

bool ComparePanel::removeSlot(ModelSlot* slot) {
  const qsizetype i = slots_.indexOf(slot);
  if (i < 0 || slots_.size() <= kMinSlots) return false;
  slots_.removeAt(i);
  SlotView* view = views_.takeAt(i);
  QSettings().remove("compare/slot" + slot->name());
  // Out of the row at once, so the panel's minimum width shrinks back now, not when the view is deleted.
  row_->removeWidget(view);
  view->hide();
  // The other panels drop their views of the slot first; work still in flight
  // finishes on the thread pool and is discarded with it.
  Q_EMIT slotsChanged();
  view->deleteLater();
  slot->deleteLater();
  updateControls();
  return true;
}

void ComparePanel::updateControls() {
  add_->setEnabled(slots_.size() < kMaxSlots);
  for (SlotView* v : views_) v->setRemovable(slots_.size() > kMinSlots);
  QSettings().setValue("compare/slotCount", int(slots_.size()));
  // The panel's minimum width follows now, even while another tab is shown: a hidden
  // panel's nested layouts keep their sizes until it is next laid out.
  row_->invalidate();
  layout()->invalidate();
  // Tab goes from "+ Add slot" through the slots left to right, each slot's controls top to bottom.
  QWidget* previous = add_;
  for (SlotView* v : views_)
    for (QWidget* w : v->focusOrder()) {
      setTabOrder(previous, w);
      previous = w;
    }
}

// Every slot's details as tall as the tallest need, so that the charts start level (and
// their bars line up) whichever model's details wrap to more lines.
void ComparePanel::alignDetails() {
  int need = 0;
  for (const SlotView* v : views_) need = std::max(need, v->detailsNeed());
  for (SlotView* v : views_) v->setDetailsHeight(need);
}

bool ComparePanel::busy() const {
  for (const ModelSlot* s : slots_)
    if (s->busy()) return true;
  return false;
}

void ComparePanel::setCanvas(const at::Tensor& canvas) {
  canvas_ = canvas;
  // An empty canvas empties every slot at once, before the models (which answer anyway) are asked.
  if (blank_canvas(canvas))
    for (SlotView* v : views_) v->showBlankCanvas();
  for (ModelSlot* s : slots_) s->request(canvas);
}

void ComparePanel::chooseCheckpoint(ModelSlot* slot) {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Load a checkpoint into slot %1").arg(slot->name()),
      settings.value("compare/lastDir").toString(), tr("Translution checkpoints (*.ckpt);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue("compare/lastDir", QFileInfo(path).absolutePath());
  loadFile(slot, path);
}

void ComparePanel::loadFile(ModelSlot* slot, const QString& path) {
  // This load was the user's choice: a failure gets a dialog (the slot keeps its model either way).
  auto connections = std::make_shared<std::pair<QMetaObject::Connection, QMetaObject::Connection>>();
  connections->first = connect(slot, &ModelSlot::loaded, this, [connections, path] {
    disconnect(connections->first);
    disconnect(connections->second);
    remember_checkpoint(path);
  });
  connections->second =
      connect(slot, &ModelSlot::failed, this, [this, connections, path](const QString& message) {
        disconnect(connections->first);
        disconnect(connections->second);
        if (!qEnvironmentVariableIsSet("TRANSLUTION_NO_DIALOGS"))
          QMessageBox::warning(this, tr("Cannot load %1").arg(QFileInfo(path).fileName()), message);
      });
  slot->load(path, slot->device());
}

}  // namespace translution::ui
