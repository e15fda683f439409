#pragma once
// A picture of any part of the studio as a file: PNG (the pixels on screen, at
// the screen's device pixel ratio), SVG or PDF (vector output of what the widgets
// paint). The path passes the same checks as every writer of the project (never a
// device, FIFO or folder; a link writes to its target), and the file appears
// whole or not at all.
#include <QString>

class QWidget;

namespace translution::ui {

// Returns an error message of one line naming the path, empty on success. The format
// follows the suffix: .png, .svg or .pdf.
QString save_widget_picture(QWidget* widget, const QString& path);

// The file-dialog filter for the formats above.
QString picture_file_filter();

}  // namespace translution::ui
