#pragma once
// A tab's page that scrolls rather than ask the window for more room than a small
// screen has: where the page fits it fills the tab as it would unwrapped, and the
// window's minimum no longer includes the page's.
class QScrollArea;
class QWidget;

namespace translution::ui {

QScrollArea* scrolling_page(QWidget* page, QWidget* parent);

}  // namespace translution::ui
