#include "layout_audit.h"

#include <QAbstractScrollArea>
#include <QApplication>
#include <QLayout>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabBar>
#include <QTabWidget>
#include <QWidget>

namespace translution::ui {
namespace {

// Readable minimums when a widget declares none (see the header).
QSize default_readable_minimum(const QWidget* w) {
  if (w->inherits("translution::ui::DigitCanvas")) return {280, 280};
  if (w->inherits("translution::ui::AttentionMap")) return {160, 160};
  if (w->inherits("QCustomPlot")) return {160, 120};
  return {};
}

// The size a widget must have so that nothing in it is cut: its minimum size where
// set, else its minimum size hint, unless its size policy lets layouts ignore that.
QSize required_minimum(const QWidget* w) {
  const QSize hint = w->minimumSizeHint();
  const QSizePolicy policy = w->sizePolicy();
  int width = w->minimumWidth() > 0 ? w->minimumWidth() : hint.width();
  int height = w->minimumHeight() > 0 ? w->minimumHeight() : hint.height();
  if (policy.horizontalPolicy() == QSizePolicy::Ignored) width = w->minimumWidth();
  if (policy.verticalPolicy() == QSizePolicy::Ignored) height = w->minimumHeight();
  return {std::max(width, 0), std::max(height, 0)};
}

bool inside_scroll_area(const QWidget* w) {
  const QWidget* parent = w->parentWidget();
  const auto* area = parent ? qobject_cast<const QAbstractScrollArea*>(parent->parentWidget()) : nullptr;
  return area && area->viewport() == parent;
}

// Siblings laid out by Qt's own composite widgets touch by design (a tab bar over
// its pane's frame); only the project's layouts are checked for overlap.
bool composite_parent(const QWidget* parent) {
  return qobject_cast<const QTabWidget*>(parent) || qobject_cast<const QTabBar*>(parent) ||
         qobject_cast<const QAbstractScrollArea*>(parent) || parent->inherits("QComboBox") ||
         parent->inherits("QAbstractSpinBox");
}

QString name_of(const QWidget* w) {
  QString path;
  for (const QWidget* at = w; at; at = at->parentWidget()) {
    if (!at->objectName().isEmpty()) return at == w ? at->objectName() : at->objectName() + "/" + path;
    path = path.isEmpty() ? QString(at->metaObject()->className()).section("::", -1)
                          : QString(at->metaObject()->className()).section("::", -1) + "/" + path;
  }
  return path;
}

bool overlay(const QWidget* w) { return w->property("layoutOverlay").toBool(); }

QString rect_text(const QRect& r) {
  return QString("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

class Auditor {
 public:
  Auditor(QWidget* window, QString tab) : window_(window), tab_(std::move(tab)) {}

  void check(const QWidget* w, LayoutAuditResult& out) {
    ++out.widgets;
    // The parts of Qt's composite widgets (a spin box's editor, a table's header) are sized by Qt.
    if (w->parentWidget() && composite_parent(w->parentWidget())) return;
    checkClipping(w, out);
    checkOverlap(w, out);
    checkMinimum(w, out);
    checkReadable(w, out);
    checkSideways(w, out);
  }

 private:
  void add(const QWidget* w, const QString& problem, LayoutAuditResult& out) {
    const QRect at(w->mapTo(window_, QPoint(0, 0)), w->size());
    out.offenders << LayoutOffender{tab_, name_of(w), w->metaObject()->className(), at, problem};
  }

  void checkClipping(const QWidget* w, LayoutAuditResult& out) {
    const QWidget* parent = w->parentWidget();
    if (!parent || inside_scroll_area(w) || overlay(w)) return;
    if (!parent->rect().contains(w->geometry()))
      add(w,
          QString("clipped by its parent %1 (%2 reaches outside 0,0 %3x%4)")
              .arg(name_of(parent), rect_text(w->geometry()))
              .arg(parent->width())
              .arg(parent->height()),
          out);
  }

  void checkOverlap(const QWidget* w, LayoutAuditResult& out) {
    const QWidget* parent = w->parentWidget();
    if (!parent || overlay(w)) return;
    for (const QObject* o : parent->children()) {
      const auto* sibling = qobject_cast<const QWidget*>(o);
      if (!sibling || sibling == w || sibling->isWindow() || !sibling->isVisible() || overlay(sibling))
        continue;
      if (sibling < w) continue;  // each pair once
      if (w->geometry().intersects(sibling->geometry()))
        add(w, QString("overlaps its sibling %1 at %2").arg(name_of(sibling), rect_text(sibling->geometry())),
            out);
    }
  }

  void checkMinimum(const QWidget* w, LayoutAuditResult& out) {
    const QSize need = required_minimum(w);
    if (w->width() + 1 < need.width() || w->height() + 1 < need.height())
      add(w,
          QString("squeezed to %1x%2 below its minimum %3x%4")
              .arg(w->width())
              .arg(w->height())
              .arg(need.width())
              .arg(need.height()),
          out);
  }

  void checkReadable(const QWidget* w, LayoutAuditResult& out) {
    const QVariant declared = w->property("readableMinimum");
    const QSize need = declared.isValid() ? declared.toSize() : default_readable_minimum(w);
    if (need.isEmpty()) return;
    // A square view (the canvas, a map) is as readable as its shorter side.
    if (w->width() < need.width() || w->height() < need.height())
      add(w,
          QString("%1x%2 is below its readable minimum %3x%4")
              .arg(w->width())
              .arg(w->height())
              .arg(need.width())
              .arg(need.height()),
          out);
  }

  // A page scrolls down, never sideways: a reader scrolling across a form loses the
  // labels or the buttons at one edge. A page narrower than its content must reflow.
  void checkSideways(const QWidget* w, LayoutAuditResult& out) {
    const auto* area = qobject_cast<const QScrollArea*>(w);
    if (!area || !area->widget() || !area->horizontalScrollBar()->isVisible()) return;
    const int room = area->viewport()->width();
    add(w,
        QString("scrolls sideways: its page needs %1 px of the %2 px it has%3")
            .arg(area->widget()->width())
            .arg(room)
            .arg(widest_part(area->widget(), room)),
        out);
  }

  // The innermost widget of a page that alone needs more than `room` px: what to make
  // narrower. None where only a row of narrower parts together overflows.
  static QString widest_part(const QWidget* page, int room) {
    const QWidget* found = nullptr;
    for (const QWidget* w : page->findChildren<QWidget*>()) {
      if (!w->isVisible() || required_minimum(w).width() <= room) continue;
      if (!found || found->isAncestorOf(w)) found = w;
    }
    if (!found) return widest_row(page, room);
    return QString("; %1 (%2) alone needs %3 px")
        .arg(name_of(found), found->metaObject()->className())
        .arg(required_minimum(found).width());
  }

  // The innermost layout of a page whose minimum exceeds `room` px, named by the widgets in it.
  static QString widest_row(const QWidget* page, int room) {
    const QLayout* found = nullptr;
    for (const QLayout* l : page->findChildren<QLayout*>()) {
      if (l->minimumSize().width() <= room) continue;
      if (!found || found->findChildren<const QLayout*>().contains(l)) found = l;
    }
    if (!found) return QString();
    QStringList parts;
    for (int i = 0; i < found->count(); ++i)
      if (const QWidget* w = found->itemAt(i)->widget(); w && w->isVisible()) parts << name_of(w);
    return QString("; a %1 of [%2] needs %3 px")
        .arg(found->metaObject()->className(), parts.join(", "))
        .arg(found->minimumSize().width());
  }

  QWidget* window_;
  QString tab_;
};

void settle() {
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
}

void audit_visible(QWidget* window, const QString& tab, LayoutAuditResult& out) {
  Auditor auditor(window, tab);
  for (QWidget* w : window->findChildren<QWidget*>())
    if (w->isVisible() && !w->isWindow() && w->window() == window) auditor.check(w, out);
}

// A tab's own tab widgets (the Robustness tab's experiments) show one page at a time:
// each of their other pages is shown and checked in turn, then the one shown before.
void audit_inner_tabs(QWidget* window, QWidget* page, const QString& tab, LayoutAuditResult& out) {
  for (QTabWidget* inner : page->findChildren<QTabWidget*>()) {
    if (!inner->isVisible()) continue;
    const int shown = inner->currentIndex();
    for (int j = 0; j < inner->count(); ++j) {
      if (j == shown) continue;
      inner->setCurrentIndex(j);
      settle();
      audit_visible(window, tab + " / " + inner->tabText(j), out);
      ++out.tabs;
    }
    inner->setCurrentIndex(shown);
    settle();
  }
}

}  // namespace

LayoutAuditResult audit_layout(QWidget* window, QTabWidget* tabs, const QSize& available) {
  LayoutAuditResult out;
  const QSize needed = window->minimumSizeHint().expandedTo(window->minimumSize());
  if (needed.width() > available.width() || needed.height() > available.height())
    out.offenders << LayoutOffender{QString(), name_of(window), window->metaObject()->className(),
                                    QRect(QPoint(0, 0), needed),
                                    QString("the window needs at least %1x%2, more than the screen's %3x%4")
                                        .arg(needed.width())
                                        .arg(needed.height())
                                        .arg(available.width())
                                        .arg(available.height())};
  window->resize(available);
  settle();
  if (window->width() > available.width() || window->height() > available.height())
    out.offenders << LayoutOffender{QString(), name_of(window), window->metaObject()->className(),
                                    window->rect(),
                                    QString("the window is %1x%2, larger than the screen's %3x%4")
                                        .arg(window->width())
                                        .arg(window->height())
                                        .arg(available.width())
                                        .arg(available.height())};
  const int current = tabs->currentIndex();
  for (int i = 0; i < tabs->count(); ++i) {
    tabs->setCurrentIndex(i);
    settle();
    audit_visible(window, tabs->tabText(i), out);
    ++out.tabs;
    audit_inner_tabs(window, tabs->widget(i), tabs->tabText(i), out);
  }
  tabs->setCurrentIndex(current);
  settle();
  return out;
}

QString describe(const LayoutOffender& o) {
  const QString where = o.tab.isEmpty() ? QString() : QString("tab '%1': ").arg(o.tab);
  return QString("%1%2 (%3) at %4: %5").arg(where, o.object, o.class_name, rect_text(o.geometry), o.problem);
}

}  // namespace translution::ui
