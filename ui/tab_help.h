#pragma once
// "What am I looking at?": a few sentences for each of the studio's tabs, in the
// order the main window adds them, for the Help menu.
#include <QString>

namespace translution::ui {

enum class StudioTab { Compare, Attention, Offsets, Training, Robustness, Attribution };

QString tab_help_title(StudioTab tab);
QString tab_help_text(StudioTab tab);  // rich text
QString about_text();                  // rich text: what the studio is, and the papers

}  // namespace translution::ui
