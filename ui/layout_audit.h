#pragma once
// A self-audit of the studio's layout, run offscreen: with the window at a given
// size, every tab (and every page of a tab's own tab widgets) is shown in turn and
// every visible widget checked for
//   * clipping: a widget that reaches outside its parent (scroll-area contents,
//     which scroll, are exempt), or a window larger than the screen;
//   * overlap: two visible sibling widgets that intersect (a widget declared an
//     overlay with the property "layoutOverlay" is exempt);
//   * squeezing: a widget smaller than its minimum size (its text or controls cut);
//   * readability: a widget smaller than its readable minimum, the property
//     "readableMinimum" (a QSize) where set, else 280 px for the canvas, 160 px for
//     an attention map and 160 x 120 px for a plot;
//   * sideways scrolling: a scrolling page whose content is wider than its view.
#include <QList>
#include <QRect>
#include <QSize>
#include <QString>

class QTabWidget;
class QWidget;

namespace translution::ui {

struct LayoutOffender {
  QString tab;         // the tab shown when it was found
  QString object;      // object name (or the nearest named ancestor's, with a path)
  QString class_name;  // e.g. QPushButton
  QRect geometry;      // in window coordinates
  QString problem;     // what collides with what, or which minimum it misses
};

struct LayoutAuditResult {
  int widgets = 0;  // widgets checked, counted once per tab they were visible on
  int tabs = 0;     // pages shown: the tabs and the pages of their own tab widgets
  QList<LayoutOffender> offenders;
};

// `window` laid out at `available` (logical pixels) must fit it; `tabs` are walked in order
// and left on the tab that was current. Events are processed so that layouts settle.
LayoutAuditResult audit_layout(QWidget* window, QTabWidget* tabs, const QSize& available);

// One line: "tab 'Compare': addSlot (QPushButton) at 10,20 80x24: clipped by ...".
QString describe(const LayoutOffender& offender);

}  // namespace translution::ui
