// The canvas driven the way a user drives it: synthetic mouse and key events.
#include "digit_canvas.h"

#include <cmath>

#include <ATen/ATen.h>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QtTest>

#include "ui_test_support.h"

using translution::ui::DigitCanvas;
using namespace translution::ui::test;

namespace {

// A filled square of ink, as a digit stand-in with a known mass centre.
at::Tensor square(int size, int x, int y, int side) {
  at::Tensor t = at::zeros({size, size});
  t.narrow(0, y, side).narrow(1, x, side).fill_(1.0);
  return t;
}

}  // namespace

class DigitCanvasTest : public QObject {
  Q_OBJECT
 private:
  DigitCanvas* canvas = nullptr;

 private Q_SLOTS:
  void init() {
    canvas = new DigitCanvas(84);
    canvas->resize(504, 504);  // 6 widget pixels per canvas pixel
    canvas->show();
    QVERIFY(QTest::qWaitForWindowExposed(canvas));
  }
  void cleanup() { delete canvas; }

  void strokeDrawsInkAndEmitsTensor() {
    QSignalSpy spy(canvas, &DigitCanvas::canvasChanged);
    QCOMPARE(canvas->pixels().sum().item<float>(), 0.0f);
    drag(canvas, widget_pos(*canvas, 20, 40), widget_pos(*canvas, 60, 40));
    QVERIFY(spy.count() >= 2);
    const at::Tensor emitted = spy.last().at(0).value<at::Tensor>();
    QCOMPARE(emitted.sizes().vec(), (std::vector<int64_t>{84, 84}));
    QVERIFY(at::equal(emitted, canvas->pixels()));
    // Ink along the stroke, none far from it.
    QVERIFY(emitted[40][40].item<float>() > 0.9f);
    QVERIFY(emitted[40][20].item<float>() > 0.9f);
    QCOMPARE(emitted[10][40].item<float>(), 0.0f);
    QVERIFY(emitted.sum().item<float>() > 40.0f);
    QVERIFY(emitted.max().item<float>() <= 1.0f);
  }

  void eraseToolAndRightButtonRemoveInk() {
    canvas->setPixels(square(84, 30, 30, 20));
    const float before = canvas->pixels().sum().item<float>();
    drag(canvas, widget_pos(*canvas, 30, 40), widget_pos(*canvas, 50, 40), Qt::RightButton);
    const float after_right = canvas->pixels().sum().item<float>();
    QVERIFY(after_right < before - 20);
    canvas->setTool(DigitCanvas::Tool::Erase);
    drag(canvas, widget_pos(*canvas, 40, 30), widget_pos(*canvas, 40, 50));
    QVERIFY(canvas->pixels().sum().item<float>() < after_right - 10);
  }

  void dragMovesMassCentreByDragDistance() {
    canvas->setPixels(square(84, 20, 20, 10));
    const QPointF before = canvas->massCentre();
    QCOMPARE(before, QPointF(24.5, 24.5));
    canvas->setTool(DigitCanvas::Tool::Move);
    QSignalSpy spy(canvas, &DigitCanvas::canvasChanged);
    drag(canvas, widget_pos(*canvas, 25, 25), widget_pos(*canvas, 25 + 17, 25 + 9));
    QVERIFY(spy.count() >= 1);
    const QPointF after = canvas->massCentre();
    QCOMPARE(after - before, QPointF(17, 9));
    QCOMPARE(canvas->pixels().sum().item<float>(), 100.0f);  // moved, not smeared
  }

  void dragStopsAtTheEdgeWithoutLosingInk() {
    canvas->setPixels(square(84, 60, 40, 10));
    canvas->setTool(DigitCanvas::Tool::Move);
    drag(canvas, widget_pos(*canvas, 65, 45), widget_pos(*canvas, 83, 45));
    QCOMPARE(canvas->massCentre(), QPointF(78.5, 44.5));  // right edge at column 83
    QCOMPARE(canvas->pixels().sum().item<float>(), 100.0f);
  }

  void arrowKeysNudgeByOnePixel() {
    canvas->setPixels(square(84, 40, 40, 4));
    canvas->setFocus();
    QTest::keyClick(canvas, Qt::Key_Right);
    QTest::keyClick(canvas, Qt::Key_Right);
    QTest::keyClick(canvas, Qt::Key_Up);
    QCOMPARE(canvas->massCentre(), QPointF(43.5, 40.5));
  }

  void undoRestoresPreviousCanvas() {
    QSignalSpy undo_spy(canvas, &DigitCanvas::undoAvailable);
    const at::Tensor first = square(84, 10, 10, 5);
    canvas->setPixels(first);
    drag(canvas, widget_pos(*canvas, 50, 50), widget_pos(*canvas, 70, 70));
    QVERIFY(!at::equal(canvas->pixels(), first));
    canvas->undo();
    QVERIFY(at::equal(canvas->pixels(), first));
    canvas->clear();
    QCOMPARE(canvas->pixels().sum().item<float>(), 0.0f);
    canvas->undo();
    QVERIFY(at::equal(canvas->pixels(), first));
    QVERIFY(undo_spy.count() > 0);
  }

  // A slide's frames join one step of the history; the next ordinary change starts a new one.
  void continuedChangesUndoInOneStep() {
    const at::Tensor start = square(84, 10, 10, 5);
    canvas->setPixels(start);
    for (int x = 12; x <= 40; x += 2)
      canvas->setPixels(square(84, x, 10, 5), canvas->origin(), DigitCanvas::UndoStep::Continue);
    canvas->nudge(0, 3);
    canvas->undo();
    QVERIFY(at::equal(canvas->pixels(), square(84, 40, 10, 5)));
    canvas->undo();
    QVERIFY(at::equal(canvas->pixels(), start));
  }

  void setPixelsRejectsWrongShapeAndClampsRange() {
    canvas->setPixels(at::ones({28, 28}));
    QCOMPARE(canvas->pixels().sum().item<float>(), 0.0f);
    canvas->setPixels(at::full({84, 84}, 2.0));
    QCOMPARE(canvas->pixels().max().item<float>(), 1.0f);
  }
};

QTEST_MAIN(DigitCanvasTest)
#include "digit_canvas_test.moc"
