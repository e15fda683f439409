#pragma once
// A one-line label for names that may not fit (slot titles, model names): it
// asks for no more than a few characters' width, elides its text to the width
// it gets, and keeps the whole text in its tooltip.
#include <QLabel>

namespace translution::ui {

class ElidedLabel : public QLabel {
  Q_OBJECT
 public:
  explicit ElidedLabel(QWidget* parent = nullptr, Qt::TextElideMode mode = Qt::ElideRight);
  // The whole text; `note`, when given, follows it in the tooltip.
  void setFullText(const QString& text, const QString& note = {});
  // What to show instead where the whole text does not fit ("D: LoR-Translution" for
  // "Slot D: LoR-Translution"), itself elided where even it does not; empty: none.
  void setShorterText(const QString& text);
  // An ending that elision keeps (" (S)" in "A: LoR-Translution (S)"): where the text does not
  // fit, what comes before it is elided instead, so the part that tells two titles apart stays.
  // Where not even an ellipsis and the ending fit, the whole text elides. Empty: none.
  void setKeptEnd(const QString& end);
  QString fullText() const { return full_; }
  bool elided() const { return text() != full_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void elide();

  QString full_, note_, shorter_, kept_end_;
  Qt::TextElideMode mode_;
};

}  // namespace translution::ui
