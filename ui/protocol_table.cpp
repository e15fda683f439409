#include "protocol_table.h"

#include <QHeaderView>

namespace translution::ui {

ProtocolTable::ProtocolTable(QWidget* parent) : FittedTable(0, 4, parent) {
  setHorizontalHeaderLabels({tr("Model"), tr("S→S"), tr("D→D"), tr("S→D")});
  const QString tips[] = {
      tr("A method trained on centred digits (S) and on digits anywhere (D)"),
      tr("Static->Static: trained on centred digits, tested on centred digits"),
      tr("Dynamic->Dynamic: trained on digits anywhere, tested on digits anywhere"),
      tr("Static->Dynamic: trained on centred digits, tested on digits anywhere (the papers' "
         "test of translation robustness)")};
  for (int c = 0; c < 4; ++c) horizontalHeaderItem(c)->setToolTip(tips[c]);
  // As wide as its columns: a stretched name column set the numbers far from their names.
  for (int c = 0; c < 4; ++c) horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  horizontalHeader()->setStretchLastSection(false);
  verticalHeader()->setVisible(false);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionMode(QAbstractItemView::NoSelection);
}

int ProtocolTable::rowOf(const QString& pair) const {
  for (int r = 0; r < rowCount(); ++r)
    if (item(r, 0) && item(r, 0)->text() == pair) return r;
  return -1;
}

int ProtocolTable::addPair(const QString& pair) {
  int row = rowOf(pair);
  if (row < 0) {
    row = rowCount();
    insertRow(row);
    setItem(row, 0, new QTableWidgetItem(pair));
  }
  return row;
}

void ProtocolTable::removeEmptyPair(const QString& pair) {
  const int row = rowOf(pair);
  if (row < 0) return;
  for (const Column c : {kStaticToStatic, kDynamicToDynamic, kStaticToDynamic})
    if (item(row, c)) return;
  removeRow(row);
}

void ProtocolTable::setAccuracy(const QString& pair, Column column, double accuracy) {
  const int row = addPair(pair);
  auto* cell = new QTableWidgetItem(QString::number(100 * accuracy, 'f', 1) + "%");
  cell->setData(Qt::UserRole, accuracy);
  cell->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  setItem(row, column, cell);
}

double ProtocolTable::accuracy(const QString& pair, Column column) const {
  const int row = rowOf(pair);
  const QTableWidgetItem* cell = row < 0 ? nullptr : item(row, column);
  return cell ? cell->data(Qt::UserRole).toDouble() : -1;
}

}  // namespace translution::ui
