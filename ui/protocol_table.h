#pragma once
// The papers' Table 2 protocol as a table: one row per model pair (a method
// trained on static and on dynamic digits), with Static->Static, Dynamic->Dynamic
// and Static->Dynamic accuracy. Cells fill in as evaluations finish.
#include "fitted_table.h"

namespace translution::ui {

class ProtocolTable : public FittedTable {
  Q_OBJECT
 public:
  enum Column { kStaticToStatic = 1, kDynamicToDynamic = 2, kStaticToDynamic = 3 };

  explicit ProtocolTable(QWidget* parent = nullptr);
  // The row named `pair`, added at the end unless it is there: work that finishes in any
  // order keeps the rows in the order they were asked for.
  int addPair(const QString& pair);
  // Takes away the row named `pair` while none of its cells is filled (work that failed).
  void removeEmptyPair(const QString& pair);
  // The row named `pair` (added on first use); `accuracy` in [0, 1].
  void setAccuracy(const QString& pair, Column column, double accuracy);
  // The accuracy shown, or a negative number for an empty cell or unknown pair.
  double accuracy(const QString& pair, Column column) const;
  int rowOf(const QString& pair) const;  // -1 if absent
};

}  // namespace translution::ui
