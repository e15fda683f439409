#include "model_picker.h"

#include <QAbstractItemView>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStylePainter>

#include "bundled_models.h"
#include "model_slot.h"

namespace translution::ui {
namespace {

// Item roles: what an entry loads, and what kind of entry it is.
constexpr int kSourceRole = Qt::UserRole;
constexpr int kKindRole = Qt::UserRole + 1;
enum Kind { kBundled, kFile, kInMemory, kOpen };
constexpr int kRecentLimit = 6;

}  // namespace

QStringList recent_checkpoints() {
  QStringList out;
  for (const QString& path : QSettings().value("compare/recentFiles").toStringList())
    if (QFile::exists(path)) out << path;
  return out;
}

void remember_checkpoint(const QString& path) {
  if (path.startsWith(":/")) return;
  QStringList recent = QSettings().value("compare/recentFiles").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kRecentLimit) recent.removeLast();
  QSettings().setValue("compare/recentFiles", recent);
}

ModelPicker::ModelPicker(ModelSlot* slot, QWidget* parent) : QComboBox(parent), slot_(slot) {
  setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  // A few characters: long names elide (whole in the tooltip) instead of widening the slot.
  setMinimumContentsLength(8);
  setPlaceholderText(tr("Choose a model…"));
  for (const BundledModel& m : bundled_model_list()) {
    addItem(m.title, m.path);
    setItemData(count() - 1, kBundled, kKindRole);
    setItemData(count() - 1, tr("Bundled with the studio (%1.ckpt)").arg(m.name), Qt::ToolTipRole);
  }
  insertSeparator(count());
  for (const QString& path : recent_checkpoints()) addFileEntry(path);
  addItem(tr("Open file…"));
  setItemData(count() - 1, kOpen, kKindRole);
  setItemData(count() - 1, tr("Load a checkpoint written by translution train or the Training tab"),
              Qt::ToolTipRole);
  setCurrentIndex(-1);
  connect(this, &QComboBox::activated, this, &ModelPicker::activate);
  connect(this, &QComboBox::currentIndexChanged, this, &ModelPicker::describe);
  describe();
  connect(slot_, &ModelSlot::loaded, this, &ModelPicker::followSlot);
  connect(slot_, &ModelSlot::failed, this, &ModelPicker::followSlot);
}

QStringList ModelPicker::sources() const {
  QStringList out;
  for (int i = 0; i < count(); ++i) {
    const QVariant kind = itemData(i, kKindRole);
    if (kind.isValid() && (kind.toInt() == kBundled || kind.toInt() == kFile))
      out << itemData(i, kSourceRole).toString();
  }
  return out;
}

bool ModelPicker::choose(const QString& source) {
  const int index = indexOfSource(source);
  if (index < 0) return false;
  setCurrentIndex(index);
  activate(index);
  return true;
}

void ModelPicker::describe() {
  const QString what =
      tr("The model in slot %1: a bundled one, a checkpoint file (Open file…), or a model sent "
         "from training")
          .arg(slot_->name());
  if (currentIndex() < 0) return setToolTip(what);
  const QString note = itemData(currentIndex(), Qt::ToolTipRole).toString();
  setToolTip(currentText() + (note.isEmpty() || note == currentText() ? QString() : "\n" + note) + "\n\n" +
             what);
}

QString ModelPicker::shownText() const {
  QStyleOptionComboBox option;
  initStyleOption(&option);
  const QRect room =
      style()->subControlRect(QStyle::CC_ComboBox, &option, QStyle::SC_ComboBoxEditField, this);
  const QString text = currentIndex() < 0 ? placeholderText() : currentText();
  // Elided in the middle: the end tells the models apart ("...centred digits", "...anywhere")
  // and a file's name ends in what it is.
  return fontMetrics().elidedText(text, Qt::ElideMiddle, room.width());
}

// As QComboBox paints itself, with the current text elided rather than cut off.
void ModelPicker::paintEvent(QPaintEvent*) {
  QStylePainter painter(this);
  QStyleOptionComboBox option;
  initStyleOption(&option);
  painter.drawComplexControl(QStyle::CC_ComboBox, option);
  if (currentIndex() < 0) option.palette.setBrush(QPalette::ButtonText, option.palette.placeholderText());
  option.currentText = shownText();
  painter.drawControl(QStyle::CE_ComboBoxLabel, option);
}

void ModelPicker::showPopup() {
  // The list may be wider than the box: every entry whole, within the screen.
  view()->setMinimumWidth(std::min(view()->sizeHintForColumn(0) + 2 * view()->frameWidth() + 24,
                                   screen() ? screen()->availableGeometry().width() : width()));
  QComboBox::showPopup();
}

void ModelPicker::activate(int index) {
  const int kind = itemData(index, kKindRole).toInt();
  if (kind == kOpen) {
    followSlot();  // the entry shown stays the slot's model until a file loads
    Q_EMIT openFileRequested(slot_);
    return;
  }
  const QString source = itemData(index, kSourceRole).toString();
  if (kind == kInMemory || source == slot_->source()) return;
  slot_->load(source, slot_->device());
}

int ModelPicker::indexOfSource(const QString& source) const {
  for (int i = 0; i < count(); ++i)
    if (itemData(i, kKindRole).toInt() != kOpen && itemData(i, kSourceRole).toString() == source &&
        itemData(i, kKindRole).isValid())
      return i;
  return -1;
}

int ModelPicker::addFileEntry(const QString& path) {
  const int at = count() - (itemData(count() - 1, kKindRole).toInt() == kOpen ? 1 : 0);
  insertItem(at, QFileInfo(path).fileName(), path);
  setItemData(at, kFile, kKindRole);
  setItemData(at, path, Qt::ToolTipRole);
  return at;
}

void ModelPicker::followSlot() {
  // A model sent from training lives only in memory: one entry names it until another model loads.
  for (int i = count() - 1; i >= 0; --i)
    if (itemData(i, kKindRole).toInt() == kInMemory && itemData(i, kSourceRole).toString() != slot_->source())
      removeItem(i);
  const QString source = slot_->source();
  if (source.isEmpty()) {
    setCurrentIndex(-1);
    return;
  }
  int index = indexOfSource(source);
  if (index < 0 && QFile::exists(source)) index = addFileEntry(source);
  if (index < 0) {
    insertItem(0, source, source);
    setItemData(0, kInMemory, kKindRole);
    const QString note = slot_->note();
    setItemData(0, note.isEmpty() ? tr("A model held in memory only") : note, Qt::ToolTipRole);
    index = 0;
  }
  setCurrentIndex(index);
  describe();
}

}  // namespace translution::ui
