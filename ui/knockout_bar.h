#pragma once
// The Offset weights tab's knockout controls: which offsets are selected (cells
// clicked or dragged over on the maps, or every offset beyond a distance), which
// of q, k, v, whether the CLS matrices too, what replaces the matrices, and the
// buttons that put a knocked-out copy into the slot and give its model back.
#include <set>

#include <QWidget>

#include "infer/offset_knockout.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;

namespace translution::ui {

class ElidedLabel;

class KnockoutBar : public QWidget {
  Q_OBJECT
 public:
  explicit KnockoutBar(QWidget* parent = nullptr);

  // The offsets of the model shown (a selection outside them is dropped), and
  // whether it has offset-indexed matrices to knock out at all.
  void setModel(const TokenLayout& layout, bool has_banks);
  void toggle(const Offset& offset);
  void addRectangle(const Offset& a, const Offset& b);
  void selectBeyond(double r);  // replaces the selection
  void clearSelection();
  const std::set<Offset>& selection() const { return selection_; }
  bool clsSelected() const;
  OffsetKnockout knockout() const;
  // Whether the slot shown predicts with a knocked-out copy, and what stands there or went wrong.
  void setKnockedOut(bool knocked_out);
  void setStatus(const QString& text);
  void setWorking(bool working);

 Q_SIGNALS:
  void selectionChanged();
  void applyRequested();
  void restoreRequested();

 private:
  void selectionEdited();
  void updateButtons();

  TokenLayout layout_;
  bool has_banks_ = false, knocked_out_ = false, working_ = false;
  std::set<Offset> selection_;
  ElidedLabel* summary_;
  QDoubleSpinBox* radius_;
  QPushButton *beyond_, *clear_, *apply_, *restore_;
  QCheckBox *q_, *k_, *v_, *cls_;
  QComboBox* replacement_;
  QLabel* status_;
};

}  // namespace translution::ui
