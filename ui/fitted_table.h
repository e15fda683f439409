#pragma once
// A table as large as its header and rows, plus a scroll bar where one shows (under
// AdjustToContents QTableView's own size hint left a blank band about a scroll bar
// high beneath the last row, and as wide at the right). Where its layout gives it
// less, it scrolls; the layout asks again whenever a scroll bar comes or goes.
#include <QTableWidget>

namespace translution::ui {

class FittedTable : public QTableWidget {
  Q_OBJECT
 public:
  FittedTable(int rows, int columns, QWidget* parent = nullptr);
  QSize sizeHint() const override;
};

}  // namespace translution::ui
