#include "scrolling_page.h"

#include <QFrame>
#include <QScrollArea>

namespace translution::ui {

QScrollArea* scrolling_page(QWidget* page, QWidget* parent) {
  auto* area = new QScrollArea(parent);
  area->setWidget(page);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  return area;
}

}  // namespace translution::ui
