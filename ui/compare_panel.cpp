#include "compare_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QSettings>

#include "model_slot.h"
#include "slot_view.h"

namespace translution::ui {

ComparePanel::ComparePanel(QWidget* parent) : QWidget(parent) { new QHBoxLayout(this); }

ModelSlot* ComparePanel::addSlot() {
  if (slots_.size() >= 4) return nullptr;
  auto* slot = new ModelSlot(QString(QChar(char16_t(u'A' + slots_.size()))), this);
  auto* view = new SlotView(slot, this);
  slots_ << slot;
  views_ << view;
  layout()->addWidget(view);
  connect(view, &SlotView::loadRequested, this, &ComparePanel::chooseCheckpoint);
  // A newly loaded model predicts the canvas the others already show.
  connect(slot, &ModelSlot::loaded, this, [this, slot] {
    if (canvas_.defined()) slot->request(canvas_);
  });
  return slot;
}

bool ComparePanel::busy() const {
  for (const ModelSlot* s : slots_)
    if (s->busy()) return true;
  return false;
}

void ComparePanel::setCanvas(const at::Tensor& canvas) {
  canvas_ = canvas;
  for (ModelSlot* s : slots_) s->request(canvas);
}

void ComparePanel::chooseCheckpoint(ModelSlot* slot) {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(this, tr("Load a checkpoint into slot %1").arg(slot->name()),
                                                    settings.value("compare/lastDir").toString(),
                                                    tr("Translution checkpoints (*.ckpt);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue("compare/lastDir", QFileInfo(path).absolutePath());
  slot->load(path, slot->device());
}

}  // namespace translution::ui
