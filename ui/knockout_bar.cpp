#include "knockout_bar.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "elided_label.h"

namespace translution::ui {
namespace {

QCheckBox* projection_box(const QString& letter, const QString& name, QWidget* parent) {
  auto* box = new QCheckBox(letter, parent);
  box->setChecked(true);
  box->setObjectName("knockout" + letter.toUpper());
  box->setToolTip(
      QObject::tr("Knock out W_%1[δ], the %2 matrices, of the selected offsets (projections the model "
                  "computes with a shared matrix are left alone)")
          .arg(letter, name));
  return box;
}

}  // namespace

KnockoutBar::KnockoutBar(QWidget* parent)
    : QWidget(parent),
      summary_(new ElidedLabel(this)),
      radius_(new QDoubleSpinBox(this)),
      beyond_(new QPushButton(tr("Select beyond"), this)),
      clear_(new QPushButton(tr("Clear"), this)),
      apply_(new QPushButton(tr("Knock out"), this)),
      restore_(new QPushButton(tr("Restore"), this)),
      q_(projection_box("q", tr("query"), this)),
      k_(projection_box("k", tr("key"), this)),
      v_(projection_box("v", tr("value"), this)),
      cls_(new QCheckBox(tr("CLS"), this)),
      replacement_(new QComboBox(this)),
      status_(new QLabel(this)) {
  summary_->setObjectName("knockoutSelection");
  radius_->setObjectName("knockoutRadius");
  radius_->setRange(0, 20);
  radius_->setSingleStep(0.5);
  radius_->setDecimals(1);
  radius_->setValue(2);
  radius_->setSuffix(tr(" patches"));  // "Select beyond [2.0 patches]" reads as it acts
  radius_->setToolTip(
      tr("Distance in patches: \"Select beyond\" selects every offset whose Euclidean length "
         "sqrt(dx² + dy²) exceeds it"));
  beyond_->setObjectName("knockoutBeyond");
  beyond_->setToolTip(
      tr("Select every offset farther than the distance beside it (Euclidean, in patches), replacing "
         "the selection"));
  clear_->setObjectName("knockoutClear");
  clear_->setToolTip(tr("Select no offset"));
  cls_->setObjectName("knockoutCls");
  cls_->setToolTip(tr("Knock out the three CLS matrices too (CLS to itself, into CLS, out of CLS)"));
  replacement_->setObjectName("knockoutReplacement");
  replacement_->addItem(tr("zero"), "zero");
  replacement_->addItem(tr("bank mean"), "mean");
  replacement_->setToolTip(tr(
      "What replaces a knocked-out matrix. Zero: the offset contributes nothing. Bank mean: the mean of the "
      "layer's offset matrices, so the pair keeps a matrix of typical size and only what is specific to the "
      "offset goes (mean-ablation, as in activation patching)"));
  apply_->setObjectName("knockoutApply");
  apply_->setToolTip(
      tr("The slot predicts with a copy of its model whose selected matrices are replaced, in every "
         "layer; predictions, attention and these maps follow"));
  restore_->setObjectName("knockoutRestore");
  restore_->setToolTip(tr("Give the slot its own model back"));
  status_->setObjectName("knockoutStatus");
  status_->setWordWrap(true);

  auto* selection_row = new QHBoxLayout;
  selection_row->addWidget(new QLabel(tr("Knockout:"), this));
  selection_row->addWidget(summary_, 1);
  selection_row->addWidget(beyond_);
  selection_row->addWidget(radius_);
  setTabOrder(beyond_, radius_);  // as the row reads: the button, then its distance
  selection_row->addWidget(clear_);
  auto* action_row = new QHBoxLayout;
  for (QWidget* w : std::initializer_list<QWidget*>{q_, k_, v_, cls_, replacement_, apply_, restore_})
    action_row->addWidget(w);
  action_row->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(selection_row);
  layout->addLayout(action_row);
  layout->addWidget(status_);

  connect(beyond_, &QPushButton::clicked, this, [this] { selectBeyond(radius_->value()); });
  connect(clear_, &QPushButton::clicked, this, &KnockoutBar::clearSelection);
  for (QCheckBox* box : {q_, k_, v_, cls_})
    connect(box, &QCheckBox::toggled, this, &KnockoutBar::selectionEdited);
  connect(apply_, &QPushButton::clicked, this, &KnockoutBar::applyRequested);
  connect(restore_, &QPushButton::clicked, this, &KnockoutBar::restoreRequested);
  selectionEdited();
}

void KnockoutBar::setModel(const TokenLayout& layout, bool has_banks) {
  layout_ = layout;
  has_banks_ = has_banks;
  const std::vector<Offset> all = layout_offsets(layout);
  std::set<Offset> kept;
  for (const Offset& o : selection_)
    if (std::find(all.begin(), all.end(), o) != all.end()) kept.insert(o);
  if (kept.size() != selection_.size()) {
    selection_ = kept;
    selectionEdited();
  }
  updateButtons();
}

void KnockoutBar::toggle(const Offset& offset) {
  if (!selection_.erase(offset)) selection_.insert(offset);
  selectionEdited();
}

void KnockoutBar::addRectangle(const Offset& a, const Offset& b) {
  for (const Offset& o : offsets_in_rectangle(layout_, a, b)) selection_.insert(o);
  selectionEdited();
}

void KnockoutBar::selectBeyond(double r) {
  const std::vector<Offset> far = offsets_beyond(layout_, r);
  selection_ = std::set<Offset>(far.begin(), far.end());
  selectionEdited();
}

void KnockoutBar::clearSelection() {
  selection_.clear();
  selectionEdited();
}

bool KnockoutBar::clsSelected() const { return cls_->isChecked(); }

OffsetKnockout KnockoutBar::knockout() const {
  OffsetKnockout k;
  k.offsets.assign(selection_.begin(), selection_.end());
  k.cls_self = k.cls_in = k.cls_out = cls_->isChecked();
  k.q = q_->isChecked();
  k.k = k_->isChecked();
  k.v = v_->isChecked();
  k.replacement = parse_replacement(replacement_->currentData().toString().toStdString());
  return k;
}

void KnockoutBar::setKnockedOut(bool knocked_out) {
  knocked_out_ = knocked_out;
  updateButtons();
}

void KnockoutBar::setStatus(const QString& text) { status_->setText(text); }

void KnockoutBar::setWorking(bool working) {
  working_ = working;
  updateButtons();
}

void KnockoutBar::selectionEdited() {
  // The selection in a few words, so that a narrow bar elides nothing that matters; how to
  // select, in its place while nothing is, and in the tooltip.
  const size_t n = selection_.size();
  const QString cls = cls_->isChecked() ? tr(" + CLS") : QString();
  const QString how = tr("click a cell of a map, or drag across cells for a rectangle");
  const bool none = n == 0 && cls.isEmpty();
  summary_->setShorterText(none ? tr("Click or drag on a map") : QString());
  summary_->setFullText(none     ? how.left(1).toUpper() + how.mid(1)
                        : n == 0 ? tr("CLS only")
                        : n == 1 ? tr("1 offset selected") + cls
                                 : tr("%1 offsets selected").arg(n) + cls,
                        tr("To select offsets: %1").arg(how));
  updateButtons();
  Q_EMIT selectionChanged();
}

void KnockoutBar::updateButtons() {
  const bool something =
      (!selection_.empty() || cls_->isChecked()) && (q_->isChecked() || k_->isChecked() || v_->isChecked());
  apply_->setEnabled(has_banks_ && something && !working_);
  restore_->setEnabled(knocked_out_ && !working_);
  for (QWidget* w : std::initializer_list<QWidget*>{radius_, beyond_, clear_, q_, k_, v_, cls_, replacement_})
    w->setEnabled(has_banks_);
}

}  // namespace translution::ui
