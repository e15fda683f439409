#pragma once
// The desktop's own style, with room around a push button's text: Fusion (Qt's default
// where the desktop names none) fits a long label to within a few pixels of its frame
// ("Select beyond", "Resume from file…"), while short ones get its wide minimum.
#include <QProxyStyle>

namespace translution::ui {

class StudioStyle : public QProxyStyle {
 public:
  StudioStyle() = default;  // wraps the style the desktop would give the application
  QSize sizeFromContents(ContentsType type, const QStyleOption* option, const QSize& contents,
                         const QWidget* widget) const override;
};

}  // namespace translution::ui
