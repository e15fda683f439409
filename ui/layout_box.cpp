#include "layout_box.h"

namespace translution::ui {

QComboBox* make_layout_box(QWidget* parent, const QString& object_name, const QString& tool_tip) {
  auto* box = new QComboBox(parent);
  box->setObjectName(object_name);
  box->addItem(QObject::tr("2-D grid"), "grid");
  box->addItem(QObject::tr("1-D sequence"), "sequence");
  box->addItem(QObject::tr("causal 1-D sequence"), "causal-sequence");
  box->setToolTip(tool_tip);
  return box;
}

}  // namespace translution::ui
