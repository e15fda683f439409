#pragma once
// A combo box of ViTConfig::layout's choices (2-D grid, 1-D sequence, causal 1-D
// sequence), each item's data the config's word.
#include <QComboBox>

namespace translution::ui {

QComboBox* make_layout_box(QWidget* parent, const QString& object_name, const QString& tool_tip);

}  // namespace translution::ui
