#pragma once
// Driving widgets the way a user does: synthetic mouse events on the canvas.
#include <QApplication>
#include <QMouseEvent>

#include "digit_canvas.h"

namespace translution::ui::test {

inline void send_mouse(QWidget* w, QEvent::Type type, QPointF pos, Qt::MouseButton button,
                       Qt::MouseButtons held) {
  QMouseEvent event(type, pos, w->mapToGlobal(pos), button, held, Qt::NoModifier);
  QApplication::sendEvent(w, &event);
}

// A drag from `from` to `to` (widget coordinates) in `steps` moves.
inline void drag(QWidget* w, QPointF from, QPointF to, Qt::MouseButton button = Qt::LeftButton,
                 int steps = 10) {
  send_mouse(w, QEvent::MouseButtonPress, from, button, button);
  for (int i = 1; i <= steps; ++i)
    send_mouse(w, QEvent::MouseMove, from + (to - from) * (double(i) / steps), Qt::NoButton, button);
  send_mouse(w, QEvent::MouseButtonRelease, to, button, Qt::NoButton);
}

// Widget position of the centre of canvas pixel (x, y).
inline QPointF widget_pos(const DigitCanvas& c, double x, double y) {
  const double s = c.scale();
  const double left = (c.width() - s * c.canvasSize()) / 2.0, top = (c.height() - s * c.canvasSize()) / 2.0;
  return {left + (x + 0.5) * s, top + (y + 0.5) * s};
}

}  // namespace translution::ui::test
