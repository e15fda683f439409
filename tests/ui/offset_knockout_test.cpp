// Offset knockout in the studio, driven like a user: cells clicked and dragged
// over on the Offset weights tab, "every offset beyond a distance", Knock out; the slot
// then predicts with a knocked-out copy (its label says so, its probabilities
// change), and Restore gives it back its own model and exactly its old answer.
#include "infer/offset_knockout.h"

#include <ATen/ATen.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "compare_panel.h"
#include "digit_canvas.h"
#include "elided_label.h"
#include "knockout_bar.h"
#include "main_window.h"
#include "model_picker.h"
#include "model_slot.h"
#include "offset_panel.h"
#include "slot_knockout.h"
#include "train/checkpoint.h"
#include "ui_test_support.h"

using namespace translution;
using namespace translution::ui;
using namespace translution::ui::test;

namespace {

QString save_model(const QTemporaryDir& dir, const std::string& model) {
  Checkpoint c;
  c.config = preset_config("tiny", model);
  c.config.depth = 2;
  c.config.dim = 16;
  c.config.heads = 2;
  c.config.head_dim = 8;
  c.config.mlp_dim = 16;
  at::manual_seed(5);
  c.model = ViT(c.config);
  c.metadata["dataset"] = "dynamic";
  c.metadata["test_accuracy"] = "0.9";
  const QString path = dir.filePath(QString::fromStdString(model) + ".ckpt");
  save_checkpoint(path.toStdString(), c);
  return path;
}

// The centre of offset (dy, dx)'s cell in heat map `index`, in the plot's pixels.
QPoint cell_centre(OffsetPanel* panel, int index, int dy, int dx) {
  const QCPColorMap* map = panel->heatMap(index);
  return QPoint(int(std::lround(map->keyAxis()->coordToPixel(dx))),
                int(std::lround(map->valueAxis()->coordToPixel(dy))));
}

// The model picker on `slot`'s view: the one naming what the slot holds.
const ModelPicker* picker_of(MainWindow* window, const ModelSlot* slot) {
  for (const ModelPicker* picker : window->compare()->findChildren<ModelPicker*>())
    if (picker->currentData().toString() == slot->source()) return picker;
  return nullptr;
}

void click(QWidget* w, QPoint at) {
  send_mouse(w, QEvent::MouseButtonPress, at, Qt::LeftButton, Qt::LeftButton);
  send_mouse(w, QEvent::MouseButtonRelease, at, Qt::LeftButton, Qt::NoButton);
}

}  // namespace

class OffsetKnockoutTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir;
  MainWindow* window = nullptr;

  void waitIdle() { QTRY_VERIFY_WITH_TIMEOUT(!window->busy(), 30000); }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("TRANSLUTION_NO_DIALOGS", "1");
  }

  void init() {
    QSettings().clear();
    window = new MainWindow(EngineOptions{}, qEnvironmentVariable("TRANSLUTION_DATA"));
    window->resize(1400, 900);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window));
    window->compare()->slots()[0]->load(save_model(dir, "translution"));
    window->compare()->slots()[1]->load(save_model(dir, "attention"));
    waitIdle();
    window->tabs()->setCurrentWidget(window->tabs()->widget(2));  // Offset weights
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
  }

  void cleanup() {
    delete window;
    window = nullptr;
  }

  void cellsAreSelectedByClickDragAndDistance() {
    OffsetPanel* panel = window->offsets();
    KnockoutBar* bar = panel->knockoutBar();
    QCOMPARE(panel->heatMapCount(), 2 * 3);
    click(panel->plot(), cell_centre(panel, 0, 0, 1));
    QVERIFY(bar->selection() == (std::set<Offset>{{0, 1}}));
    QCOMPARE(panel->selectionMarks(), 6);               // the cell on every map: 2 layers x q, k, v
    click(panel->plot(), cell_centre(panel, 3, 0, 1));  // a second click deselects, on any map
    QVERIFY(bar->selection().empty());
    QCOMPARE(panel->selectionMarks(), 0);
    drag(panel->plot(), cell_centre(panel, 1, -1, -2), cell_centre(panel, 1, 1, 0));
    QCOMPARE(bar->selection().size(), size_t(3 * 3));
    QVERIFY(bar->selection().count({-1, -2}) == 1 && bar->selection().count({1, 0}) == 1);
    // Only the maps of the chosen projections are hatched.
    bar->findChild<QCheckBox*>("knockoutK")->setChecked(false);
    QCOMPARE(panel->selectionMarks(), 9 * 4);
    bar->findChild<QDoubleSpinBox*>("knockoutRadius")->setValue(4);
    QTest::mouseClick(bar->findChild<QPushButton*>("knockoutBeyond"), Qt::LeftButton);
    const std::vector<Offset> far = offsets_beyond(TokenLayout::grid(7, 7), 4);
    QVERIFY(bar->selection() == std::set<Offset>(far.begin(), far.end()));
    // The selection in a few words; how to make one while there is none, and on a narrow bar
    // in fewer words still, never cut mid-sentence.
    auto* summary = bar->findChild<ElidedLabel*>("knockoutSelection");
    QCOMPARE(summary->fullText(), QString("%1 offsets selected").arg(far.size()));
    QTest::mouseClick(bar->findChild<QPushButton*>("knockoutClear"), Qt::LeftButton);
    QVERIFY(bar->selection().empty());
    QVERIFY(summary->fullText().startsWith("Click a cell of a map"));
    summary->resize(summary->fontMetrics().horizontalAdvance("Click or drag on a map") + 4,
                    summary->height());
    QCOMPARE(summary->text(), QString("Click or drag on a map"));
    QVERIFY(!bar->findChild<QPushButton*>("knockoutApply")->isEnabled());  // nothing to knock out
    for (QWidget* w : bar->findChildren<QWidget*>())
      if (qobject_cast<QAbstractButton*>(w) || qobject_cast<QComboBox*>(w) ||
          qobject_cast<QAbstractSpinBox*>(w))
        QVERIFY2(!w->toolTip().isEmpty(), qPrintable(w->objectName() + " has no tooltip"));
  }

  void aKnockedOutSlotPredictsDifferentlyAndRestoreGivesItsModelBack() {
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 30, 20), widget_pos(*canvas, 45, 65));
    waitIdle();
    ModelSlot* slot = window->compare()->slots()[0];
    const auto original = slot->predictor();
    const QString source = slot->source();
    const std::vector<double> before = slot->lastPrediction()->probabilities;

    OffsetPanel* panel = window->offsets();
    const QCPRange scale_before = panel->colourScale()->dataRange();
    KnockoutBar* bar = panel->knockoutBar();
    bar->findChild<QDoubleSpinBox*>("knockoutRadius")->setValue(1.5);
    QTest::mouseClick(bar->findChild<QPushButton*>("knockoutBeyond"), Qt::LeftButton);
    const size_t selected = bar->selection().size();
    QCOMPARE(selected, size_t(13 * 13 - 9));
    auto* replacement = bar->findChild<QComboBox*>("knockoutReplacement");
    replacement->setCurrentIndex(replacement->findData("mean"));
    auto* apply = bar->findChild<QPushButton*>("knockoutApply");
    QVERIFY(apply->isEnabled());
    QTest::mouseClick(apply, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(slot->predictor() != original, 30000);
    waitIdle();
    QCOMPARE(slot->source(), QString("translution (%1 offsets knocked out)").arg(selected));
    QVERIFY(panel->knockout()->knockedOut(slot));
    QVERIFY(bar->findChild<QLabel*>("knockoutStatus")->text().contains("knocked-out copy"));
    QVERIFY(!slot->predictor()->metadata().count("test_accuracy"));  // the copy does not claim the original's
    // The slot's model picker names the copy, and its tooltip says what the copy is and how to undo it.
    const ModelPicker* picker = picker_of(window, slot);
    QVERIFY(picker);
    QVERIFY2(
        picker->toolTip().contains("A copy of translution with") && picker->toolTip().contains("Restore"),
        qPrintable(picker->toolTip()));
    QVERIFY(slot->lastPrediction().has_value());
    const std::vector<double> knocked = slot->lastPrediction()->probabilities;
    double change = 0;
    for (size_t c = 0; c < before.size(); ++c) change = std::max(change, std::abs(knocked[c] - before[c]));
    QVERIFY2(change > 1e-4, qPrintable(QString("largest change %1").arg(change)));
    // The maps show the copy's weights: a knocked-out cell holds the bank's mean, the same in every such
    // cell, coloured where the scale reaches it and blank beneath it (never the scale's lowest colour).
    const auto norm_at = [panel](int row, int column) {
      return panel->describeCell(0, row, column).section("|W| = ", 1).toDouble();
    };
    QVERIFY(norm_at(0, 0) > 0);
    QCOMPARE(norm_at(0, 0), norm_at(12, 12));
    const double cell = panel->heatMap(0)->data()->cell(0, 0);
    QVERIFY(norm_at(0, 0) < scale_before.lower ? std::isnan(cell)
                                               : cell == panel->heatMap(0)->data()->cell(12, 12));
    // The colour scale stays the slot's own model's: the cells the knockout left keep their colours.
    QCOMPARE(panel->colourScale()->dataRange().lower, scale_before.lower);
    QCOMPARE(panel->colourScale()->dataRange().upper, scale_before.upper);
    // The slot's own model is untouched.
    QVERIFY(original->offset_magnitudes()[0][0].norms[0].item<float>() !=
            slot->predictor()->offset_magnitudes()[0][0].norms[0].item<float>());

    auto* restore = bar->findChild<QPushButton*>("knockoutRestore");
    QVERIFY(restore->isEnabled());
    QTest::mouseClick(restore, Qt::LeftButton);
    QVERIFY(slot->predictor() == original);
    QCOMPARE(slot->source(), source);
    QVERIFY2(!picker->toolTip().contains("A copy of"), qPrintable(picker->toolTip()));
    QVERIFY(!panel->knockout()->knockedOut(slot));
    QVERIFY(!restore->isEnabled());
    waitIdle();
    QVERIFY(slot->lastPrediction().has_value());
    QVERIFY(slot->lastPrediction()->probabilities == before);  // bit for bit
  }

  // Another model loaded into a knocked-out slot ends the knockout: Restore would otherwise bring back a
  // model the user has since replaced.
  void loadingAnotherModelEndsTheKnockout() {
    ModelSlot* slot = window->compare()->slots()[0];
    KnockoutBar* bar = window->offsets()->knockoutBar();
    bar->toggle({0, 0});
    QTest::mouseClick(bar->findChild<QPushButton*>("knockoutApply"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window->offsets()->knockout()->knockedOut(slot), 30000);
    waitIdle();
    QCOMPARE(slot->source(), QString("translution (1 offset knocked out)"));
    slot->load(dir.filePath("attention.ckpt"));
    waitIdle();
    QVERIFY(!window->offsets()->knockout()->knockedOut(slot));
    QVERIFY(!bar->findChild<QPushButton*>("knockoutRestore")->isEnabled());
  }

  // A model without offset-indexed matrices has nothing to knock out.
  void aSelfAttentionSlotCannotBeKnockedOut() {
    OffsetPanel* panel = window->offsets();
    panel->findChild<QComboBox*>("offsetSlot")->setCurrentIndex(1);
    KnockoutBar* bar = panel->knockoutBar();
    bar->selectBeyond(1);
    QVERIFY(!bar->findChild<QPushButton*>("knockoutApply")->isEnabled());
    QVERIFY(!bar->findChild<QPushButton*>("knockoutBeyond")->isEnabled());
  }
};

QTEST_MAIN(OffsetKnockoutTest)
#include "offset_knockout_test.moc"
