#include "elided_label.h"

#include <QResizeEvent>

namespace translution::ui {

ElidedLabel::ElidedLabel(QWidget* parent, Qt::TextElideMode mode) : QLabel(parent), mode_(mode) {
  setWordWrap(false);
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

void ElidedLabel::setFullText(const QString& text, const QString& note) {
  full_ = text;
  note_ = note;
  setToolTip(note.isEmpty() ? text : text + "\n" + note);
  updateGeometry();
  elide();
}

void ElidedLabel::setShorterText(const QString& text) {
  shorter_ = text;
  elide();
}

void ElidedLabel::setKeptEnd(const QString& end) {
  kept_end_ = end;
  elide();
}

QSize ElidedLabel::sizeHint() const {
  const QMargins m = contentsMargins();
  return {fontMetrics().horizontalAdvance(full_) + m.left() + m.right() + 2 * margin() + 2,
          QLabel::sizeHint().height()};
}

// A few characters and the ellipsis: enough to tell slots apart, never enough to widen the window.
QSize ElidedLabel::minimumSizeHint() const {
  return {fontMetrics().horizontalAdvance(QStringLiteral("Slot A…")), QLabel::minimumSizeHint().height()};
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
  QLabel::resizeEvent(event);
  elide();
}

void ElidedLabel::elide() {
  const int room = std::max(0, contentsRect().width() - 2 * margin());
  const bool fits = fontMetrics().horizontalAdvance(full_) <= room;
  const QString& shown = fits || shorter_.isEmpty() ? full_ : shorter_;
  const int end_width = fontMetrics().horizontalAdvance(kept_end_);
  // Kept only with room for an ellipsis before it; narrower than that, the whole text elides.
  const int least = end_width + fontMetrics().horizontalAdvance(QStringLiteral("…"));
  if (!fits && !kept_end_.isEmpty() && shown.endsWith(kept_end_) && least <= room) {
    const QString head = shown.chopped(kept_end_.size());
    QLabel::setText(fontMetrics().elidedText(head, mode_, room - end_width) + kept_end_);
    return;
  }
  QLabel::setText(fontMetrics().elidedText(shown, mode_, room));
}

}  // namespace translution::ui
