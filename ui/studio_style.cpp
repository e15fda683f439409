#include "studio_style.h"

#include <algorithm>

namespace translution::ui {
namespace {

// Logical pixels each side of a push button's text, at the least.
constexpr int kButtonTextPadding = 12;

}  // namespace

QSize StudioStyle::sizeFromContents(ContentsType type, const QStyleOption* option, const QSize& contents,
                                    const QWidget* widget) const {
  QSize size = QProxyStyle::sizeFromContents(type, option, contents, widget);
  if (type == CT_PushButton) size.setWidth(std::max(size.width(), contents.width() + 2 * kButtonTextPadding));
  return size;
}

}  // namespace translution::ui
