// The Attribution tab driven like a user: a slot and a class chosen, the map
// arrives off the GUI thread, the overlay goes on and off the canvas, and a
// newer canvas replaces work still running for an older one.
#include "attribution_panel.h"

#include <ATen/ATen.h>
#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "digit_canvas.h"
#include "model_slot.h"
#include "train/checkpoint.h"

using namespace translution;
using namespace translution::ui;

namespace {

QString save_model(const QTemporaryDir& dir, const std::string& model) {
  Checkpoint c;
  c.config = preset_config("tiny", model);
  c.config.depth = 2;
  c.config.dim = 16;  // 84x84, patch 12
  c.config.heads = 2;
  c.config.head_dim = 8;
  c.config.mlp_dim = 16;
  at::manual_seed(5);
  c.model = ViT(c.config);
  const QString path = dir.filePath(QString::fromStdString(model) + ".ckpt");
  save_checkpoint(path.toStdString(), c);
  return path;
}

// A stroke, as a drawn "1" would be, `dx` pixels right of the centre.
at::Tensor stroke(int dx) {
  at::Tensor canvas = at::zeros({84, 84});
  canvas.narrow(0, 30, 24).narrow(1, 40 + dx, 4).fill_(1.0);
  return canvas;
}

}  // namespace

class AttributionPanelTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir;
  QList<ModelSlot*> slots;
  DigitCanvas* canvas = nullptr;
  AttributionPanel* panel = nullptr;

  QComboBox* box(const char* name) const { return panel->findChild<QComboBox*>(name); }
  QCheckBox* overlayBox() const { return panel->findChild<QCheckBox*>("attributionOverlay"); }
  void waitIdle() { QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 60000); }

 private Q_SLOTS:
  void initTestCase() {
    slots = {new ModelSlot(EngineOptions{}, "A", this), new ModelSlot(EngineOptions{}, "B", this)};
    slots[0]->load(save_model(dir, "translution"));
    slots[1]->load(save_model(dir, "attention"));
    QTRY_VERIFY_WITH_TIMEOUT(slots[0]->predictor() && slots[1]->predictor(), 60000);
  }

  void init() {
    canvas = new DigitCanvas(84);
    panel = new AttributionPanel(slots, canvas);
    canvas->show();
    panel->resize(700, 600);
    panel->show();
    QVERIFY(QTest::qWaitForWindowExposed(panel));
  }

  void cleanup() {
    delete panel;
    delete canvas;
  }

  void everyControlHasATooltip() {
    int controls = 0;
    for (QWidget* w : panel->findChildren<QWidget*>())
      if (qobject_cast<QAbstractButton*>(w) || qobject_cast<QComboBox*>(w) ||
          qobject_cast<QAbstractSpinBox*>(w)) {
        ++controls;
        QVERIFY2(!w->toolTip().isEmpty(), qPrintable(w->objectName()));
      }
    QCOMPARE(controls, 5);
  }

  // Slot B, class 3: the map arrives, non-empty, on a scale centred on 0, and the overlay toggles.
  void aChosenSlotAndClassGiveAMapAndAnOverlay() {
    box("attributionSlot")->setCurrentIndex(1);
    box("attributionClass")->setCurrentIndex(1 + 3);
    panel->setCanvas(stroke(0));
    waitIdle();
    QVERIFY(panel->attribution());
    QCOMPARE(panel->attribution()->target, int64_t(3));
    QCOMPARE(panel->attribution()->steps, int64_t(32));
    QVERIFY(panel->attribution()->map.abs().sum().item<double>() > 0);
    QVERIFY(at::equal(panel->attributedCanvas(), stroke(0)));
    QCPColorMapData* data = panel->colourMap()->data();
    QCOMPARE(data->keySize(), 84);
    QCOMPARE(data->valueSize(), 84);
    QCOMPARE(data->cell(41, 40), panel->attribution()->map[40][41].item<double>());
    const QCPRange range = panel->colourScale()->dataRange();
    QCOMPARE(range.lower, -range.upper);
    QVERIFY(panel->summary().contains("gap"));
    QVERIFY(canvas->overlay().isNull());
    overlayBox()->setChecked(true);
    QCOMPARE(canvas->overlay().size(), QSize(84, 84));
    QCOMPARE(qAlpha(canvas->overlay().pixel(0, 0)), 0);  // no ink, nothing attributed: transparent
    overlayBox()->setChecked(false);
    QVERIFY(canvas->overlay().isNull());
  }

  // The overlay says the sign by hue and the size by opacity, in proportion: half the scale's end
  // is half as opaque as the end, so middling pixels do not look as strong as the strongest.
  void theOverlaysOpacityIsInProportionToTheValue() {
    const at::Tensor map = at::tensor({0.0, 1.0, 2.0, -2.0, 4.0}, at::kDouble).reshape({1, 5});
    const QImage overlay = attribution_overlay(map, 2.0);
    QCOMPARE(qAlpha(overlay.pixel(0, 0)), 0);
    const int half = qAlpha(overlay.pixel(1, 0)), whole = qAlpha(overlay.pixel(2, 0));
    QVERIFY2(std::abs(2 * half - whole) <= 1, qPrintable(QString("%1 and %2").arg(half).arg(whole)));
    QCOMPARE(qAlpha(overlay.pixel(3, 0)), whole);
    QCOMPARE(qAlpha(overlay.pixel(4, 0)), whole);                     // beyond the scale: clamped to its end
    QVERIFY(qRed(overlay.pixel(2, 0)) > qBlue(overlay.pixel(2, 0)));  // raises the class: red
    QVERIFY(qBlue(overlay.pixel(3, 0)) > qRed(overlay.pixel(3, 0)));  // lowers it: blue
  }

  // The colour bar stands beside the square map, as tall as it and level with it.
  void theColourBarSpansTheMap() {
    panel->setCanvas(stroke(0));
    waitIdle();
    panel->plot()->replot();
    const QRect map = panel->colourMap()->keyAxis()->axisRect()->rect();
    const QRect bar = panel->colourScale()->axis()->axisRect()->rect();
    QVERIFY(std::abs(map.width() - map.height()) <= 1);
    QVERIFY2(std::abs(bar.top() - map.top()) <= 1 && std::abs(bar.bottom() - map.bottom()) <= 1,
             qPrintable(QString("bar %1..%2, map %3..%4")
                            .arg(bar.top())
                            .arg(bar.bottom())
                            .arg(map.top())
                            .arg(map.bottom())));
    QVERIFY(bar.left() > map.right());
    QVERIFY(bar.left() - map.right() < 60);
  }

  void occlusionUsesThePatchAndNeedsNoSteps() {
    box("attributionMethod")->setCurrentIndex(1);
    QVERIFY(!panel->findChild<QSpinBox*>("attributionSteps")->isEnabled());
    panel->setCanvas(stroke(0));
    waitIdle();
    QVERIFY(panel->attribution());
    QCOMPARE(panel->attribution()->occluder, int64_t(12));
    box("attributionMethod")->setCurrentIndex(2);
    waitIdle();
    QCOMPARE(panel->attribution()->occluder, int64_t(4));
    QVERIFY(panel->summary().contains(QString::fromUtf8("4\u00a0px tiles")));
  }

  // The work for the first canvas is still running when the second comes: only the second is shown.
  void aNewerCanvasReplacesAnOlderResult() {
    QSignalSpy shown(panel, &AttributionPanel::attributed);
    panel->setCanvas(stroke(-10));
    QVERIFY(panel->busy());
    panel->setCanvas(stroke(10));
    waitIdle();
    QCOMPARE(shown.count(), 1);
    QVERIFY(at::equal(panel->attributedCanvas(), stroke(10)));
  }

  // Hidden and without the overlay it waits; the overlay asks for the map even then.
  void aHiddenPanelComputesOnlyForTheOverlay() {
    panel->hide();
    panel->setCanvas(stroke(5));
    QVERIFY(!panel->busy());
    QVERIFY(!panel->attribution());
    overlayBox()->setChecked(true);
    waitIdle();
    QVERIFY(panel->attribution());
    QVERIFY(!canvas->overlay().isNull());
    panel->setCanvas(at::zeros({84, 84}));
    QVERIFY(canvas->overlay().isNull());  // it belonged to the canvas before
    waitIdle();
    QVERIFY(panel->summary().contains("empty"));
  }
};

QTEST_MAIN(AttributionPanelTest)
#include "attribution_panel_test.moc"
