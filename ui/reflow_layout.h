#pragma once
// A layout of a few parts side by side that stacks them when its width does not
// hold them: the fewest rows whose columns (up to a maximum) keep their parts'
// minimum widths, then the fewest columns that still give those rows (four parts
// that do not fit in one row sit two by two, not three and one); parts placed row
// by row, the width to spare shared by the columns' stretch factors and the height
// to spare by the rows with a part that grows down (all rows where none does). A page built of such rows
// scrolls down on a narrow screen and never sideways.
//
// Its height depends on its width (hasHeightForWidth), which QScrollArea and the
// box layouts honour: a parent gives it the height of the columns it will use.
#include <QLayout>
#include <QList>
#include <QMap>

namespace translution::ui {

class ReflowLayout : public QLayout {
 public:
  explicit ReflowLayout(int max_columns, QWidget* parent = nullptr);
  ~ReflowLayout() override;

  void addLayout(QLayout* layout);                // QLayout::addWidget adds a widget
  void insertWidget(int index, QWidget* widget);  // before part `index`; last where there is none (or -1)
  // The share of the spare width column `column` gets while the parts sit side by side
  // (1 unless set). 0 keeps the column at its parts' preferred width (their size
  // hint), and the parts go side by side only where that width fits: a table as
  // wide as its columns beside a plot, or above it, narrower, on a narrow page.
  void setColumnStretch(int column, int stretch);
  int columnsFor(int width) const;  // the columns a layout of `width` px uses
  // The space between columns where it differs from the rows' (spacing()); -1: the same.
  void setColumnGap(int gap);

  void addItem(QLayoutItem* item) override;
  int count() const override;
  QLayoutItem* itemAt(int index) const override;
  QLayoutItem* takeAt(int index) override;
  Qt::Orientations expandingDirections() const override;
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize minimumSize() const override;
  QSize sizeHint() const override;
  void setGeometry(const QRect& rect) override;

 private:
  struct Arrangement {
    int columns = 1;
    QList<int> widths;   // per column, the spare width shared out
    QList<int> heights;  // per row, as the tallest part at its column's width needs
  };
  QList<QLayoutItem*> shown() const;  // the parts that take room (hidden widgets do not)
  QList<int> columnMinimums(const QList<QLayoutItem*>& parts, int columns) const;
  void shareSpare(int spare, QList<int>& widths) const;
  Arrangement arrange(const QList<QLayoutItem*>& parts, int width) const;
  int spacingOrDefault() const;
  int columnGap() const;

  int max_columns_;
  QList<QLayoutItem*> items_;
  QMap<int, int> stretch_;  // column -> stretch factor, where set
  int column_gap_ = -1;
};

}  // namespace translution::ui
