#include "compare_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QMessageBox>
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
  // This load was the user's choice: a failure gets a dialog (the slot keeps its model either way).
  auto connections = std::make_shared<std::pair<QMetaObject::Connection, QMetaObject::Connection>>();
  connections->first = connect(slot, &ModelSlot::loaded, this, [connections] {
    disconnect(connections->first);
    disconnect(connections->second);
  });
  connections->second = connect(slot, &ModelSlot::failed, this, [this, connections, path](const QString& message) {
    disconnect(connections->first);
    disconnect(connections->second);
    if (!qEnvironmentVariableIsSet("TRANSLUTION_NO_DIALOGS"))
      QMessageBox::warning(this, tr("Cannot load %1").arg(QFileInfo(path).fileName()), message);
  });
  slot->load(path, slot->device());
}

}  // namespace translution::ui
