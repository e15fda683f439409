// The studio's panels driven like a user: strokes on the canvas update every
// slot's prediction, a clicked patch becomes the attention query, the offset
// view has one heat map per layer and relative projection.
#include <algorithm>
#include <fstream>

#include <ATen/ATen.h>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "attention_map.h"
#include "attention_panel.h"
#include "attention_view.h"
#include "compare_panel.h"
#include "cpu/bf16_gemm.h"
#include "digit_canvas.h"
#include "elided_label.h"
#include "image/png_io.h"
#include "main_window.h"
#include "model_picker.h"
#include "model_slot.h"
#include "offset_panel.h"
#include "plot_legend.h"
#include "probability_chart.h"
#include "protocol_table.h"
#include "robustness_panel.h"
#include "shift_metrics_panel.h"
#include "slot_view.h"
#include "train/checkpoint.h"
#include "training_panel.h"
#include "ui_test_support.h"

using namespace translution;
using namespace translution::ui;
using namespace translution::ui::test;

namespace {
void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}
}  // namespace

namespace {

ViTConfig small(const std::string& model, int64_t depth) {
  ViTConfig c = preset_config("tiny", model);
  c.depth = depth;
  c.dim = 16;
  c.heads = 2;
  c.head_dim = 8;
  c.mlp_dim = 16;
  return c;  // 84x84, patch 12: a 7x7 grid
}

QString save_model(const QTemporaryDir& dir, const std::string& model, int64_t depth,
                   const QString& file = {}) {
  Checkpoint c;
  c.config = small(model, depth);
  at::manual_seed(11);
  c.model = ViT(c.config);
  c.metadata["dataset"] = "dynamic";
  const QString path = dir.filePath(file.isEmpty() ? QString::fromStdString(model) + ".ckpt" : file);
  save_checkpoint(path.toStdString(), c);
  return path;
}

// How many pixels one unit of `rect`'s bottom and left axes spans.
QSizeF unit_pixels(const QCPAxisRect* rect) {
  const QCPAxis* x = rect->axis(QCPAxis::atBottom);
  const QCPAxis* y = rect->axis(QCPAxis::atLeft);
  return {std::abs(x->coordToPixel(1) - x->coordToPixel(0)),
          std::abs(y->coordToPixel(1) - y->coordToPixel(0))};
}

// The widgets of `expected` in the order Tab reaches them, starting from the first.
QList<QWidget*> tab_order(const QList<QWidget*>& expected) {
  QList<QWidget*> seen{expected.first()};
  QWidget* w = expected.first();
  for (int i = 0; i < 5000 && seen.size() < expected.size(); ++i) {
    w = w->nextInFocusChain();
    if (w == expected.first()) break;
    if (expected.contains(w) && !seen.contains(w)) seen << w;
  }
  return seen;
}

bool is_control(const QWidget* w) {
  return qobject_cast<const QAbstractButton*>(w) || qobject_cast<const QComboBox*>(w) ||
         qobject_cast<const QAbstractSpinBox*>(w) ||
         (qobject_cast<const QAbstractSlider*>(w) && !qobject_cast<const QScrollBar*>(w));
}

void settle() {
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
}

}  // namespace

class StudioPanelsTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir;
  QString translution_ckpt, attention_ckpt;
  MainWindow* window = nullptr;

  void waitIdle() { QTRY_VERIFY_WITH_TIMEOUT(!window->busy(), 30000); }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // settings go to a test location
    qputenv("TRANSLUTION_NO_DIALOGS", "1");    // errors go to the status line, not a modal box
    translution_ckpt = save_model(dir, "translution", 2);
    attention_ckpt = save_model(dir, "attention", 3);
  }

  void init() {
    QSettings().clear();  // every test starts from the same window: two slots, nothing remembered
    window = new MainWindow(EngineOptions{}, qEnvironmentVariable("TRANSLUTION_DATA"));
    window->resize(1400, 800);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window));
    window->compare()->slots()[0]->load(translution_ckpt);
    window->compare()->slots()[1]->load(attention_ckpt);
    waitIdle();
    QCOMPARE(window->compare()->slots()[0]->error(), QString());
  }

  void cleanup() {
    delete window;
    window = nullptr;
  }

  void everySlotPredictsEachStroke() {
    DigitCanvas* canvas = window->canvas();
    for (int stroke = 0; stroke < 2; ++stroke) {
      drag(canvas, widget_pos(*canvas, 20 + 10 * stroke, 30), widget_pos(*canvas, 50, 60 - 10 * stroke));
      waitIdle();
      const at::Tensor now = canvas->pixels();
      for (ModelSlot* slot : window->compare()->slots()) {
        QVERIFY(slot->lastPrediction().has_value());
        // The prediction shown is for exactly the canvas on screen (stale requests were dropped).
        QVERIFY(at::equal(slot->lastPrediction()->canvas, now));
        double total = 0;
        for (double p : slot->lastPrediction()->probabilities) total += p;
        QVERIFY(std::abs(total - 1.0) < 1e-5);
      }
    }
    for (SlotView* view : window->compare()->views()) {
      QVERIFY(!view->predictionText().isEmpty() && view->predictionText() != "–");
      QCOMPARE(int(view->chart()->probabilities().size()), 10);
    }
  }

  // A chart too narrow for its y label beside the ten class labels drops the label and thins
  // its ticks, and takes them back when widened.
  void aNarrowChartGivesItsClassLabelsTheRoom() {
    ProbabilityChart chart;
    chart.resize(400, 200);
    chart.show();
    settle();
    QVERIFY(!chart.narrow());
    QCOMPARE(chart.yAxis->label(), QString("probability"));
    chart.resize(130, 200);
    settle();
    QVERIFY(chart.narrow());
    QVERIFY(chart.yAxis->label().isEmpty());
    chart.resize(400, 200);
    settle();
    QCOMPARE(chart.yAxis->label(), QString("probability"));
  }

  void aBlankCanvasGetsNoPredictedClass() {
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 20, 30), widget_pos(*canvas, 50, 60));
    waitIdle();
    for (SlotView* view : window->compare()->views()) QVERIFY(view->chart()->drawnTotal() > 0.99);
    canvas->clear();
    // At once, before any model has answered for the empty canvas: no class, no bars.
    for (SlotView* view : window->compare()->views()) {
      QCOMPARE(view->predictionText(), QString("–"));
      QCOMPARE(view->chart()->drawnTotal(), 0.0);
    }
    waitIdle();
    for (SlotView* view : window->compare()->views()) {
      QVERIFY(at::equal(view->slot()->lastPrediction()->canvas, canvas->pixels()));
      QCOMPARE(view->predictionText(), QString("–"));
      QVERIFY(view->confidenceText().contains("nothing to classify"));
      // The models answered (often confidently); none of it is drawn.
      QVERIFY(view->chart()->probabilities().empty());
      QCOMPARE(view->chart()->drawnTotal(), 0.0);
    }
    drag(canvas, widget_pos(*canvas, 20, 30), widget_pos(*canvas, 50, 60));
    waitIdle();
    for (SlotView* view : window->compare()->views()) {
      QVERIFY(view->predictionText() != "–");
      QVERIFY(view->confidenceText().endsWith("% sure"));
      QVERIFY(std::abs(view->chart()->drawnTotal() - 1.0) < 1e-5);
    }
  }

  void rapidStrokesEndOnTheLatestCanvas() {
    DigitCanvas* canvas = window->canvas();
    for (int i = 0; i < 15; ++i)
      drag(canvas, widget_pos(*canvas, 10 + 4 * i, 10), widget_pos(*canvas, 10 + 4 * i, 70), Qt::LeftButton,
           3);
    waitIdle();
    for (ModelSlot* slot : window->compare()->slots())
      QVERIFY(at::equal(slot->lastPrediction()->canvas, canvas->pixels()));
  }

  void clickingAPatchChangesTheAttentionView() {
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 30, 30), widget_pos(*canvas, 50, 50));
    waitIdle();
    AttentionView* view = window->attention()->views()[0];
    QCOMPARE(view->queryToken(), 0);  // CLS until a patch is picked
    const at::Tensor before = view->mainMap()->patchWeights().clone();
    canvas->setTool(DigitCanvas::Tool::Query);
    const at::Tensor pixels = canvas->pixels();
    send_mouse(canvas, QEvent::MouseButtonPress, widget_pos(*canvas, 3 * 12 + 5, 2 * 12 + 5), Qt::LeftButton,
               Qt::LeftButton);
    send_mouse(canvas, QEvent::MouseButtonRelease, widget_pos(*canvas, 3 * 12 + 5, 2 * 12 + 5),
               Qt::LeftButton, Qt::NoButton);
    QVERIFY(at::equal(canvas->pixels(), pixels));  // the Query tool does not draw
    for (AttentionView* v : window->attention()->views()) QCOMPARE(v->queryToken(), 1 + 2 * 7 + 3);
    const at::Tensor after = view->mainMap()->patchWeights();
    QVERIFY(!at::allclose(before, after));
    // The view shows row `query` of the model's own attention.
    const auto& prediction = view->slot()->lastPrediction();
    QVERIFY(at::allclose(after.flatten(), prediction->attention.back()[0][1 + 2 * 7 + 3].narrow(0, 1, 49)));
    // Small multiples: every layer and head.
    QCOMPARE(view->smallMultiples().size(), 2 * 2);
    QCOMPARE(window->attention()->views()[1]->smallMultiples().size(), 3 * 2);
  }

  void offsetViewHasOneHeatMapPerLayerAndProjection() {
    OffsetPanel* panel = window->offsets();
    QCOMPARE(panel->heatMapCount(), 2 * 3);  // translution: q, k and v relative in both layers
    QVERIFY(panel->describeCell(0, 6, 6).contains("offset (dx 0, dy 0)"));
    QVERIFY(panel->describeCell(0, 14, 1).contains("into CLS"));
    auto* box = panel->findChild<QComboBox*>("offsetSlot");
    box->setCurrentIndex(1);  // slot B: self-attention
    QCOMPARE(panel->heatMapCount(), 0);
    QVERIFY(panel->message().contains("no per-offset weights"));
  }

  void aShortTrainingRunDrawsCurvesAndCanBeStopped() {
    TrainingPanel* panel = window->training();
    // Before any run the epoch axis spans the epochs a run would take, and follows the field.
    auto* epochs = panel->findChild<QSpinBox*>("epochs");
    QVERIFY(epochs);
    epochs->setValue(3);
    QCOMPARE(panel->lossPlot()->xAxis->range().upper, 3.0);
    epochs->setValue(1);
    QCOMPARE(panel->lossPlot()->xAxis->range().upper, 1.0);
    // An empty plot says why it is empty, until the first curve.
    const auto placeholder_shown = [](QCustomPlot* plot) {
      for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i));
            text && text->text().startsWith("No run yet"))
          return text->visible();
      return false;
    };
    QVERIFY(placeholder_shown(panel->lossPlot()) && placeholder_shown(panel->accuracyPlot()));
    panel->setQuickRun(400, 256);
    QSignalSpy finished(panel, &TrainingPanel::runFinished);
    panel->startRun();
    QVERIFY(panel->current() != nullptr);
    QVERIFY(panel->current()->running());
    // Curves grow while the GUI thread stays free (this loop is the GUI thread).
    QTRY_VERIFY_WITH_TIMEOUT(panel->lossPlot()->graph(0)->dataCount() >= 2, 120000);
    QVERIFY(panel->accuracyPlot()->graph(0)->dataCount() >= 2);
    QVERIFY(!placeholder_shown(panel->lossPlot()) && !placeholder_shown(panel->accuracyPlot()));
    QVERIFY(panel->hasUnsavedRun());
    panel->stopRun();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QCOMPARE(finished.first().at(0).toInt(), int(TrainProgress::Event::Stopped));
    QVERIFY(panel->current()->trainer().step() < 400);
    // Send the stopped run's model to slot B: it predicts the canvas with it.
    ModelSlot* slot = window->compare()->slots()[1];
    QSignalSpy loaded(slot, &ModelSlot::loaded);
    QToolButton* send = panel->sendButton();
    QCOMPARE(send->text(), QString("To slot A"));  // a click goes to the first slot until another is chosen
    for (QAction* a : send->menu()->actions())
      if (a->text() == "To slot B") a->trigger();
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(send->text(), QString("To slot B"));  // and then to the slot last chosen
    QCOMPARE(slot->predictor()->config().model, std::string("lor"));
    waitIdle();
    QVERIFY(slot->lastPrediction().has_value());
    // Saving writes a checkpoint that loads back.
    const QString path = dir.filePath("run.ckpt");
    panel->current()->save(path);
    QVERIFY(!panel->hasUnsavedRun());
    QCOMPARE(load_checkpoint(path.toStdString()).training->step, panel->current()->trainer().step());
    // The curves' key sits beneath each plot, clear of the data.
    for (QCustomPlot* plot : {panel->lossPlot(), panel->accuracyPlot()}) {
      plot->replot();
      QVERIFY(legend_is_beneath(plot) && plot->legend->visible());
      QCOMPARE(plot->legend->itemCount(), 1);  // one entry per run
      QVERIFY(!plot->axisRect()->rect().intersects(plot->legend->outerRect()));
      QVERIFY(plot->legend->outerRect().top() >= plot->axisRect()->rect().bottom());
    }
    // The curves export as CSV; a path that is a folder is refused with one line, and nothing breaks.
    const QString csv = dir.filePath("curves.csv");
    QCOMPARE(panel->exportCurvesTo(csv), QString());
    QFile written(csv);
    QVERIFY(written.open(QIODevice::ReadOnly));
    QVERIFY(written.readLine().startsWith("run,label,step,epoch,loss"));
    QVERIFY(!written.readLine().isEmpty());
    const QString refused = panel->exportCurvesTo(dir.path());
    QVERIFY2(
        refused.contains(dir.path()) && refused.contains("not a regular file") && !refused.contains('\n'),
        qPrintable(refused));
    QVERIFY(panel->findChild<QLabel*>("trainingStatus")->text().contains(refused));
    QVERIFY(QFileInfo(dir.path()).isDir());
    // The form's augmentation switch reaches the run's configuration.
    auto* fresh = panel->findChild<QCheckBox*>("freshPositions");
    QVERIFY(fresh != nullptr && !panel->trainConfig().fresh_positions);
    fresh->setChecked(true);
    QVERIFY(panel->trainConfig().fresh_positions);
    // So does the precision switch, offered only where the CPU has bfloat16 products.
    auto* bf16 = panel->findChild<QCheckBox*>("bf16Products");
    QVERIFY(bf16 != nullptr && panel->trainConfig().precision == "fp32");
    QCOMPARE(bf16->isEnabled(), bf16_gemm_available());
    if (bf16->isEnabled()) {
      bf16->setChecked(true);
      QVERIFY(panel->trainConfig().precision == "bf16");
    }
  }

  void robustnessPanelSlidesSweepsAndEvaluates() {
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 30, 30), widget_pos(*canvas, 45, 50));
    waitIdle();
    RobustnessPanel* panel = window->robustness();
    for (QSpinBox* box : panel->findChildren<QSpinBox*>()) {  // a small workload
      if (box->toolTip().startsWith("The first N test digits")) box->setValue(5);
      if (box->toolTip().startsWith("Pixels between")) box->setValue(14);
      if (box->toolTip().startsWith("Test digits per")) box->setValue(50);
    }
    // Before the first slide the empty plot says what it will show; the curves replace that.
    const auto hints = [panel] {
      int n = 0;
      for (int i = 0; i < panel->movePlot()->itemCount(); ++i)
        n += panel->movePlot()->item(i)->objectName() == "movePlotHint";
      return n;
    };
    QCOMPARE(hints(), 1);
    panel->slideAcross();
    QVERIFY(!panel->movePlot()->legend->visible());  // no curves yet: no empty legend box
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 60000);
    QCOMPARE(hints(), 0);
    QCOMPARE(panel->movePlot()->graphCount(), 2);  // one curve per slot
    QVERIFY(panel->movePlot()->graph(0)->dataCount() > 10);
    QVERIFY(panel->movePlot()->legend->visible());
    QCOMPARE(panel->movePlot()->legend->itemCount(), 2);
    panel->runSweep();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 120000);
    QCOMPARE(panel->sweepMaps()->mapCount(), 2);  // one heat map per slot
    // Cells sit at the digit's centre in canvas pixels: the first position puts the 28x28 frame at 0.
    const QCPColorMapData* cells = panel->sweepMaps()->map(0)->data();
    QCOMPARE(cells->keyRange().lower, 14.0);
    QCOMPARE(cells->keyRange().upper, 84.0 - 14.0);
    // A stride that does not divide the 56 px of free width: the last position (56) is off the stride,
    // so the cells lie on a 1 px grid with the positions' cells filled and the rest empty.
    for (QSpinBox* box : panel->findChildren<QSpinBox*>())
      if (box->toolTip().startsWith("Pixels between")) box->setValue(5);
    panel->runSweep();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 120000);
    QCPColorMapData* fine = panel->sweepMaps()->map(0)->data();
    QCOMPARE(fine->keySize(), 57);
    QVERIFY(!std::isnan(fine->cell(55, 55)) && !std::isnan(fine->cell(56, 56)));  // positions 55 and 56
    QVERIFY(std::isnan(fine->cell(1, 0)));                                        // no position at 1
  }

  // The protocol table is as tall as its rows (up to six), its controls right beneath it.
  void theProtocolTableIsAsTallAsItsRows() {
    RobustnessPanel* panel = window->robustness();
    ProtocolTable* table = panel->protocolTable();
    window->tabs()->setCurrentWidget(panel);
    window->resize(1280, 800);
    settle();
    const auto empty_rows_px = [&] {
      int rows = 0;
      for (int r = 0; r < table->rowCount(); ++r) rows += table->rowHeight(r);
      return table->viewport()->height() - rows;
    };
    const int empty_table = table->height();
    for (const char* pair : {"one", "two", "three"})
      table->setAccuracy(pair, ProtocolTable::kStaticToStatic, 0.5);
    settle();
    QVERIFY(table->height() > empty_table);
    QVERIFY2(empty_rows_px() >= 0 && empty_rows_px() <= 2,
             qPrintable(QString("%1 px of empty rows").arg(empty_rows_px())));
    for (int i = 0; i < 6; ++i)
      table->setAccuracy(QString("more %1").arg(i), ProtocolTable::kStaticToStatic, 0.5);
    settle();
    QVERIFY(table->height() <= 190);  // nine rows: it scrolls
  }

  // On a short screen the path demo becomes the first tab beside the experiments, and goes back
  // above them when there is height again; starting an experiment still brings its page forward.
  void aShortRobustnessPanelMakesThePathDemoATab() {
    RobustnessPanel* panel = window->robustness();
    auto* tabs = panel->findChild<QTabWidget*>();
    auto* splitter = panel->findChild<QSplitter*>("robustnessSplitter");
    window->tabs()->setCurrentWidget(panel);
    const QSize before = window->size();
    window->resize(1024, 600);
    settle();
    QVERIFY(panel->compact());
    QCOMPARE(tabs->count(), 4);
    QCOMPARE(tabs->currentIndex(), 0);
    QVERIFY(tabs->currentWidget()->isAncestorOf(panel->movePanel()));
    QCOMPARE(splitter->count(), 1);
    window->resize(1366, 900);
    settle();
    QVERIFY(!panel->compact());
    QCOMPARE(tabs->count(), 3);
    QCOMPARE(splitter->count(), 2);
    QVERIFY(panel->movePanel()->isVisible());
    QVERIFY(!tabs->currentWidget()->isAncestorOf(panel->movePanel()));
    window->resize(before);
    settle();
  }

  // Where the demo and the protocol page both fit, the page gets all the height it asks for (its
  // last row in view, no scroll bar) and the demo's plot the rest; where they do not, the demo
  // keeps what it asks for, up to three fifths. A splitter the user moved is left as it is.
  void theProtocolPageGetsItsHeightWhereItFits() {
    RobustnessPanel* panel = window->robustness();
    auto* tabs = panel->findChild<QTabWidget*>();
    auto* splitter = panel->findChild<QSplitter*>("robustnessSplitter");
    window->tabs()->setCurrentWidget(panel);
    tabs->setCurrentIndex(0);  // the protocol
    const QSize before = window->size();
    auto* page = qobject_cast<QScrollArea*>(tabs->currentWidget());
    QVERIFY(page != nullptr);
    window->resize(1920, 1080);
    settle();
    QVERIFY2(
        !page->verticalScrollBar()->isVisible(),
        qPrintable(QString("page %1 of %2").arg(page->height()).arg(page->widget()->sizeHint().height())));
    // What the demo's page needs at its width (its parts stack on a narrow one).
    const auto demo_needs = [panel] {
      const QWidget* move = panel->movePanel();
      const auto* area = qobject_cast<const QScrollArea*>(move->parentWidget()->parentWidget());
      return move->hasHeightForWidth() ? move->heightForWidth(area->viewport()->width())
                                       : move->sizeHint().height();
    };
    const int demo = splitter->sizes()[0];
    QVERIFY2(demo > demo_needs(), qPrintable(QString::number(demo)));
    window->resize(1280, 720);
    settle();
    const QList<int> cramped = splitter->sizes();
    // Both do not fit there: the page asks for more than the demo leaves it.
    QVERIFY(page->widget()->heightForWidth(page->viewport()->width()) > cramped[1]);
    QVERIFY(std::abs(cramped[0] - std::min(demo_needs(), (cramped[0] + cramped[1]) * 3 / 5)) <= 2);
    splitter->setSizes({cramped[0] - 40, cramped[1] + 40});
    Q_EMIT splitter->splitterMoved(cramped[0] - 40, 1);  // as a drag of the handle reports it
    window->resize(1920, 1080);
    settle();
    QVERIFY(splitter->sizes()[0] != demo);  // the user's split, not fitted again
    window->resize(before);
    settle();
  }

  // Start stays in view: between the form and the curves where the page fits, pinned beneath
  // the scrolling page where a small screen stacks the form into one column.
  void theTrainingControlsStayInViewOnASmallScreen() {
    TrainingPanel* panel = window->training();
    window->tabs()->setCurrentWidget(panel);
    QPushButton* start = panel->startButton();
    const auto bottom_in_panel = [&] { return start->mapTo(panel, QPoint(0, start->height())).y(); };
    window->resize(1280, 800);
    settle();
    QVERIFY(start->isVisible());
    QVERIFY(bottom_in_panel() < panel->lossPlot()->mapTo(panel, QPoint()).y());
    window->activateWindow();
    start->setFocus();
    const bool focused = start->hasFocus();  // where the platform gives focus at all
    window->resize(1024, 600);
    settle();
    QVERIFY(start->isVisible());
    if (focused) QVERIFY(start->hasFocus());  // moving the controls keeps the focus in them
    QVERIFY2(bottom_in_panel() <= panel->height(),
             qPrintable(QString("Start ends at %1 of %2 px").arg(bottom_in_panel()).arg(panel->height())));
    window->resize(1280, 800);
    settle();
    QVERIFY(bottom_in_panel() < panel->lossPlot()->mapTo(panel, QPoint()).y());
  }

  void shiftMetricsFillTheTableAndTheLayerPlotForEverySlot() {
    RobustnessPanel* robustness = window->robustness();
    ShiftMetricsPanel* panel = robustness->shiftMetrics();
    panel->setSizes(20, 3, 28, 6);  // a small workload
    robustness->measureShiftMetrics();
    panel->measure();  // a second click supersedes the first: one result, for the newest request
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 120000);
    QCOMPARE(panel->table()->rowCount(), 2);     // one row per slot
    QCOMPARE(panel->table()->columnCount(), 7);  // slot, three consistencies, worst case and means
    for (int r = 0; r < 2; ++r)
      for (int c = 1; c < 6; ++c) {
        const QString cell = panel->table()->item(r, c)->text();
        QVERIFY2(cell.endsWith('%'), qPrintable(cell));
        const double value = cell.chopped(1).toDouble();
        QVERIFY(value >= 0 && value <= 100);
      }
    const int layers =
        int(window->compare()->slots()[0]->predictor()->config().depth) + 1;  // embedding + blocks
    QCOMPARE(panel->layerPlot()->graphCount(), 4);  // per slot: image tokens and CLS
    QCOMPARE(panel->layerPlot()->graph(0)->dataCount(), layers);
    QVERIFY(panel->layerPlot()->graph(0)->data()->at(0)->value <
            1e-5);  // no absolute positions: embedding exact
    QVERIFY(legend_is_beneath(panel->layerPlot()));
    QCOMPARE(panel->layerPlot()->legend->itemCount(), 2);  // one entry per slot
    QVERIFY(panel->note().contains("20 digits"));
  }

  // A legend wrapped into rows may leave empty cells in its last row; later layout passes
  // (every replot, each resize) read past them. The plot's minimum height grows with the
  // legend's rows, so that they never take the axis rect's height.
  void aLegendBeneathAPlotWrapsOverEmptyCells() {
    QCustomPlot plot;
    for (int i = 0; i < 3; ++i) plot.addGraph()->setName(QString("slot %1").arg(i));
    plot.setMinimumHeight(150);
    plot.resize(300, 400);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    show_legend_beneath(&plot, 2);
    plot.replot();
    QCOMPARE(plot.legend->wrap(), 2);
    QCOMPARE(plot.legend->itemCount(), 4);  // two rows of two cells, the last one empty
    plot.replot();
    const int two_rows = plot.minimumHeight();
    QVERIFY2(two_rows >= 150 + 2 * 10, qPrintable(QString::number(two_rows)));
    plot.resize(90, 400);  // room for one entry a row
    QApplication::processEvents();
    plot.replot();
    QCOMPARE(plot.legend->wrap(), 1);
    QVERIFY2(plot.minimumHeight() > two_rows, qPrintable(QString::number(plot.minimumHeight())));
  }

  void anImageFileBecomesAPreparedDigitOnTheCanvas() {
    // A dark "1" on light paper, off-centre, larger than MNIST's box.
    at::Tensor paper = at::full({120, 90}, 0.9);
    paper.narrow(0, 10, 80).narrow(1, 60, 8).fill_(0.1);
    const QString path = dir.filePath("one.png");
    write_png_gray(path.toStdString(), paper);
    QCOMPARE(window->openImage(path), QString());
    const at::Tensor pixels = window->canvas()->pixels();
    const at::Tensor rows = (pixels > 0.5).any(1).nonzero().flatten();
    QCOMPARE(rows.max().item<int64_t>() - rows.min().item<int64_t>() + 1, 20);  // fitted to 20 px, like MNIST
    const QPointF centre = window->canvas()->massCentre();
    QVERIFY(std::abs(centre.x() - 42) < 1.5 && std::abs(centre.y() - 42) < 1.5);  // centred on the canvas
    write_bytes(dir.filePath("notes.png").toStdString(), {'h', 'i'});
    QVERIFY(window->openImage(dir.filePath("notes.png")).contains("is not a PNG or JPEG image"));
  }

  void aBadCheckpointLeavesTheSlotAsItWasAndSaysWhy() {
    ModelSlot* slot = window->compare()->slots()[0];
    QFile bad(dir.filePath("bad.ckpt"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("not a checkpoint");
    bad.close();
    QSignalSpy failed(slot, &ModelSlot::failed);
    slot->load(dir.filePath("bad.ckpt"));
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY2(failed.first().at(0).toString().contains("bad.ckpt"),
             qPrintable(failed.first().at(0).toString()));
    QCOMPARE(slot->source(), translution_ckpt);  // the loaded model stays
    QVERIFY(slot->predictor() != nullptr);
  }

  // Translution ViT-A/7 at a batch of 128 needs tens of GB: with 2 GB available (the
  // override makes the machine's memory irrelevant) the form says so before the run,
  // Start refuses it naming the numbers, and the panel and the window go on working.
  void aRunThatWillNotFitIsRefusedWithItsEstimate() {
    qputenv("TRANSLUTION_AVAILABLE_MEMORY", "2000000000");
    TrainingPanel* panel = window->training();
    window->tabs()->setCurrentIndex(3);
    auto choose = [panel](const char* name, const QString& text) {
      QComboBox* box = panel->findChild<QComboBox*>(name);
      QVERIFY(box != nullptr && box->findText(text) >= 0);
      box->setCurrentText(text);
    };
    choose("method", "Translution");
    choose("preset", "A");
    choose("patch", "7 px");
    panel->findChild<QSpinBox*>("batch")->setValue(128);
    QVERIFY2(panel->memoryLabel()->text().contains("of 2.0 GB available; this run will not fit"),
             qPrintable(panel->memoryLabel()->text()));
    panel->startRun();
    QCOMPARE(panel->runCount(), 0);
    const QString status = panel->findChild<QLabel*>("trainingStatus")->text();
    QVERIFY2(status.startsWith("Not started: training translution ViT-A/7") &&
                 status.contains("but 2.0 GB is available") && status.contains("method lor"),
             qPrintable(status));
    // A run that fits starts, and the canvas still predicts.
    QVERIFY2(!panel->findChild<QSpinBox*>("lorC1")->isEnabled(), "LoR's widths apply to LoR methods only");
    choose("method", "LoR-Translution");
    choose("preset", "tiny");
    choose("patch", "12 px");
    panel->findChild<QSpinBox*>("batch")->setValue(8);
    // LoR's two widths and its shared terms reach the run's model.
    QVERIFY(panel->findChild<QSpinBox*>("lorC1")->isEnabled());
    panel->findChild<QSpinBox*>("lorC1")->setValue(4);
    panel->findChild<QSpinBox*>("lorC2")->setValue(12);
    panel->findChild<QCheckBox*>("lorShared")->setChecked(false);
    panel->findChild<QCheckBox*>("lorValueSlices")->setChecked(true);
    const ViTConfig lor = panel->modelConfig();
    QCOMPARE(lor.lor_c1, int64_t(4));
    QCOMPARE(lor.lor_c2, int64_t(12));
    QVERIFY(!lor.lor_shared);
    QVERIFY(lor.lor_value_slices);
    panel->findChild<QCheckBox*>("lorValueSlices")->setChecked(false);
    // A hybrid: its first blocks' operator and count reach the config; "same as Method" is none.
    panel->findChild<QComboBox*>("firstModel")->setCurrentText("Translution");
    panel->findChild<QSpinBox*>("firstBlocks")->setValue(1);
    const ViTConfig hybrid = panel->modelConfig();
    QCOMPARE(QString::fromStdString(hybrid.first_model), QString("translution"));
    QCOMPARE(hybrid.first_blocks, int64_t(1));
    QCOMPARE(QString::fromStdString(hybrid.block_model(0)), QString("translution"));
    QCOMPARE(QString::fromStdString(hybrid.block_model(1)), QString("lor"));
    panel->findChild<QComboBox*>("firstModel")->setCurrentIndex(0);
    QCOMPARE(panel->modelConfig().first_blocks, int64_t(0));
    // The run below reads its patches as a causal 1-D sequence (1-D offsets, each patch sees the earlier
    // ones).
    choose("layout", "causal 1-D sequence");
    QCOMPARE(QString::fromStdString(panel->modelConfig().layout), QString("causal-sequence"));
    QVERIFY2(!panel->memoryLabel()->text().contains("will not fit"),
             qPrintable(panel->memoryLabel()->text()));
    panel->setQuickRun(2, 64);
    QSignalSpy finished(panel, &TrainingPanel::runFinished);
    panel->startRun();
    QCOMPARE(panel->runCount(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 20, 20), widget_pos(*canvas, 60, 60));
    waitIdle();
    QVERIFY(window->compare()->slots()[0]->lastPrediction().has_value());
    qunsetenv("TRANSLUTION_AVAILABLE_MEMORY");
  }

  // The N x N matrix keeps square cells at any window size, with its colour scale
  // under exactly its data; the query map and the small multiples have labelled scales too.
  void theAttentionMatrixHasSquareCellsAndLabelledScales() {
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 20, 30), widget_pos(*canvas, 50, 60));
    waitIdle();
    window->tabs()->setCurrentWidget(window->attention());
    const int n = 1 + 7 * 7;
    for (const QSize size : {QSize(1400, 800), QSize(1280, 800), QSize(1600, 1000), QSize(1000, 1000)}) {
      window->resize(size);
      settle();
      for (AttentionView* view : window->attention()->views()) {
        QCustomPlot* plot = view->matrixPlot();
        plot->replot();
        QCOMPARE(plot->xAxis->range().lower, -0.5);
        QCOMPARE(plot->xAxis->range().upper, n - 0.5);
        QCOMPARE(plot->yAxis->range().lower, -0.5);
        QCOMPARE(plot->yAxis->range().upper, n - 0.5);
        const QRect data = plot->axisRect()->rect();
        QVERIFY2(std::abs(data.width() - data.height()) <= 1, qPrintable(QString("%1x%2 at %3x%4")
                                                                             .arg(data.width())
                                                                             .arg(data.height())
                                                                             .arg(size.width())
                                                                             .arg(size.height())));
        const QSizeF cell = unit_pixels(plot->axisRect());
        QVERIFY(std::abs(cell.width() - cell.height()) < 0.05);
        QVERIFY2(data.width() >= 150, qPrintable(QString("%1 px at %2x%3, plot %4x%5 view %6x%7")
                                                     .arg(data.width())
                                                     .arg(size.width())
                                                     .arg(size.height())
                                                     .arg(plot->width())
                                                     .arg(plot->height())
                                                     .arg(view->width())
                                                     .arg(view->height())));  // readable
        const QRect bar = view->matrixScale()->axis()->axisRect()->rect();
        QVERIFY(std::abs(bar.left() - data.left()) <= 1 && std::abs(bar.right() - data.right()) <= 1);
        QVERIFY(bar.top() > data.bottom());
        QVERIFY(view->mainMap()->mapArea().width() >= 160);
      }
    }
    AttentionView* view = window->attention()->views()[0];
    QCOMPARE(view->matrixScale()->label(), QString("attention weight (log scale)"));
    const at::Tensor matrix = view->slot()->lastPrediction()->attention.back()[0];
    QVERIFY(std::abs(view->matrixScale()->dataRange().upper - matrix.max().item<double>()) < 1e-6);
    // Three decades on a log scale: the many weights near 1/N get colours of their own.
    QCOMPARE(view->matrixScale()->dataScaleType(), QCPAxis::stLogarithmic);
    QVERIFY(std::abs(view->matrixScale()->dataRange().lower * 1000 - view->matrixScale()->dataRange().upper) <
            1e-9);
    QVERIFY(view->mainScale()->colourScale()->label().contains("attention weight"));
    QVERIFY(std::abs(view->mainScale()->colourScale()->dataRange().upper - view->mainMap()->colourTop()) <
            1e-9);
    QVERIFY(view->mainMap()->colourTop() > 0);
    QVERIFY(!view->multiplesScale()->colourScale()->label().isEmpty());
    QVERIFY(view->describeMatrixCell(0, 1).startsWith("query CLS → key patch (row 1, column 1)"));
  }

  // Each weight map spans exactly the model's 13 x 13 offsets (and the CLS row), with square cells;
  // a layer's three maps share a row where each keeps 100 px, else every map has a row of its own.
  void offsetMapsSpanTheModelsOffsetsWithSquareCells() {
    window->tabs()->setCurrentIndex(2);
    OffsetPanel* panel = window->offsets();
    for (const QSize size : {QSize(1400, 800), QSize(800, 600), QSize(1280, 800), QSize(1800, 700)}) {
      window->resize(size);
      settle();
      panel->plot()->replot();
      QCOMPARE(panel->heatMapCount(), 2 * 3);
      const auto rect_of = [panel](int i) { return panel->heatMap(i)->keyAxis()->axisRect()->rect(); };
      const bool one_a_row = size.width() < 1000;
      QCOMPARE(rect_of(1).top() == rect_of(0).top(), !one_a_row);
      QCOMPARE(rect_of(1).left() == rect_of(0).left(), one_a_row);
      QVERIFY2(rect_of(0).width() >= 100, qPrintable(QString::number(rect_of(0).width())));
      // A colour scale beside every row of maps (a row a layer, or a row a map), alike.
      QCOMPARE(panel->colourScaleCount(), one_a_row ? 2 * 3 : 2);
      // No copy outlives its row: the plot holds as many scales as the panel counts.
      QCOMPARE(int(panel->plot()->findChildren<QCPColorScale*>().size()), panel->colourScaleCount());
      for (QCPColorScale* scale : panel->plot()->findChildren<QCPColorScale*>()) {
        QCOMPARE(scale->dataRange(), panel->colourScale()->dataRange());
        QCOMPARE(scale->label(), panel->colourScale()->label());
      }
      for (int i = 0; i < panel->heatMapCount(); ++i) {
        QCPColorMap* map = panel->heatMap(i);
        QCOMPARE(map->keyAxis()->range().lower, -6.5);
        QCOMPARE(map->keyAxis()->range().upper, 6.5);
        QCOMPARE(map->valueAxis()->range().lower, -6.5);
        QCOMPARE(map->valueAxis()->range().upper, 8.5);  // 13 offsets, a gap row, the CLS row
        const QRect data = map->keyAxis()->axisRect()->rect();
        QVERIFY2(std::abs(data.width() - data.height() * 13.0 / 15.0) <= 1,
                 qPrintable(QString("%1x%2").arg(data.width()).arg(data.height())));
        // The CLS row is labelled on the dy axis, beneath the offsets' ticks.
        const auto ticks = map->valueAxis()->ticker().dynamicCast<QCPAxisTickerText>();
        QVERIFY(ticks);
        QCOMPARE(ticks->ticks().value(8.0), QString("CLS"));
        QCOMPARE(ticks->ticks().value(-6.0), QString("-6"));
      }
    }
    QCOMPARE(panel->colourScale()->label(), QString("|W[δ]| (Frobenius norm)"));
  }

  // The contributions' colours span their own 1st to 99th percentile, not a range their outliers set.
  void contributionsAreColouredByTheirOwnPercentiles() {
    DigitCanvas* canvas = window->canvas();
    drag(canvas, widget_pos(*canvas, 20, 30), widget_pos(*canvas, 50, 60));
    waitIdle();
    window->tabs()->setCurrentIndex(2);
    OffsetPanel* panel = window->offsets();
    panel->findChild<QComboBox*>("offsetView")->setCurrentIndex(1);
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy() && panel->heatMapCount() > 0, 30000);
    std::vector<double> values;
    for (int i = 0; i < panel->heatMapCount(); ++i) {
      QCPColorMapData* d = panel->heatMap(i)->data();
      for (int x = 0; x < d->keySize(); ++x)
        for (int y = 0; y < d->valueSize(); ++y)
          if (std::isfinite(d->cell(x, y))) values.push_back(d->cell(x, y));
      QCOMPARE(panel->heatMap(i)->keyAxis()->range().upper, 6.5);
    }
    QVERIFY(values.size() > 100);
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    const QCPRange range = panel->colourScale()->dataRange();
    QVERIFY(range.lower >= *low && range.upper <= *high);
    QVERIFY(range.upper < *high);  // the brightest outliers are clipped instead of darkening the rest
    const double n = double(values.size());
    const double above =
        double(std::count_if(values.begin(), values.end(), [&](double v) { return v > range.upper; }));
    const double below =
        double(std::count_if(values.begin(), values.end(), [&](double v) { return v < range.lower; }));
    QVERIFY(above / n <= 0.01 + 1.0 / n && below / n <= 0.01 + 1.0 / n);
    QVERIFY(panel->colourScale()->label().contains("percentile"));
    QVERIFY(panel->describeCell(0, 6, 6).contains("carried"));
  }

  void quantileRangeSkipsWhatIsNotANumber() {
    std::vector<double> v;
    for (int i = 1; i <= 101; ++i) v.push_back(i);
    v.push_back(std::nan(""));
    v.push_back(INFINITY);
    const QCPRange r = quantile_range(v, 0.01, 0.99);
    QCOMPARE(r.lower, 2.0);
    QCOMPARE(r.upper, 100.0);
    const QCPRange flat = quantile_range({3, 3, 3}, 0.01, 0.99);
    QVERIFY(flat.lower == 3 && flat.upper > 3);
    QCOMPARE(quantile_range({}, 0.01, 0.99).upper, 1.0);
  }

  // A slot without a model says where to choose one; long names elide and keep the whole in the tooltip.
  void anEmptySlotPointsAtItsPickerAndLongNamesElide() {
    ModelSlot* c = window->compare()->addSlot();
    SlotView* empty = window->compare()->viewOf(c);
    QVERIFY2(empty->detailsText().contains("picker above"), qPrintable(empty->detailsText()));
    QCOMPARE(empty->picker()->currentIndex(), -1);
    QVERIFY(empty->picker()->placeholderText().startsWith("Choose a model"));
    QVERIFY(empty->chart()->probabilities().empty());
    // Its attention view shows no empty maps and axes, but what to do.
    AttentionView* attention = window->attention()->views()[2];
    const QList<QLabel*> labels = attention->findChildren<QLabel*>();
    QVERIFY(std::any_of(labels.begin(), labels.end(), [](const QLabel* l) {
      return !l->isHidden() && l->text().startsWith("Slot C has no model: choose one in its picker");
    }));
    QVERIFY(attention->mainMap()->isHidden() || !attention->mainMap()->isVisibleTo(attention));
    window->compare()->addSlot();        // four slots on a small screen
    window->tabs()->setCurrentIndex(0);  // Compare
    window->resize(1280, 800);
    const QString name = "translution-trained-on-digits-anywhere-at-patch-twelve-for-the-comparison.ckpt";
    ModelSlot* a = window->compare()->slots()[0];
    a->load(save_model(dir, "translution", 2, name));
    waitIdle();
    settle();
    ModelPicker* picker = window->compare()->views()[0]->picker();
    QCOMPARE(picker->currentText(), name);
    // Elided in the middle: both ends stay, where names differ (a file's extension, "centred digits").
    QVERIFY2(picker->shownText() != name && picker->shownText().contains("…") &&
                 picker->shownText().startsWith("translution") && picker->shownText().endsWith(".ckpt"),
             qPrintable(picker->shownText()));
    QVERIFY(picker->toolTip().startsWith(name));
    auto* title = empty->findChild<ElidedLabel*>();
    QCOMPARE(title->fullText(), empty->titleText());
    QVERIFY(title->toolTip().contains(empty->titleText()));
    ElidedLabel label;
    label.setFullText("Slot A: translution-qk with a name far longer than any slot is wide");
    label.show();
    label.resize(80, 20);
    QVERIFY(label.elided() && label.text().endsWith("…"));
    QVERIFY(label.toolTip().contains(label.fullText()));
    label.resize(2000, 20);
    QVERIFY(!label.elided());
    // Where the whole title does not fit but its shorter form does, the shorter form shows, whole.
    label.setFullText("Slot D: LoR-Translution");
    label.setShorterText("D: LoR-Translution");
    label.resize(label.fontMetrics().horizontalAdvance("D: LoR-Translution") + 4, 20);
    QCOMPARE(label.text(), QString("D: LoR-Translution"));
    label.resize(label.fontMetrics().horizontalAdvance("Slot D: LoR-Translution") + 4, 20);
    QCOMPARE(label.text(), QString("Slot D: LoR-Translution"));
    // A kept end stays whole where the rest is elided: "(S)" tells two LoR slots apart.
    label.setFullText("C: LoR-Translution (S)");
    label.setShorterText(QString());
    label.setKeptEnd(" (S)");
    label.resize(label.fontMetrics().horizontalAdvance("C: LoR… (S)") + 4, 20);
    QVERIFY2(label.elided() && label.text().endsWith("… (S)") && label.text().startsWith("C: "),
             qPrintable(label.text()));
    label.resize(2000, 20);
    QCOMPARE(label.text(), QString("C: LoR-Translution (S)"));
  }

  // With four slots every tab fits the tab area of a 1280 x 800 screen (about 850 x 600) without
  // cutting a control, and removing slots gives the width back.
  void fourSlotsFitASmallScreenAndGiveTheWidthBack() {
    QWidget* compare = window->compare();
    waitIdle();  // the slots show their predictions: what they show sets their minimum
    settle();
    const int two_slots = compare->minimumSizeHint().width();
    window->compare()->addSlot();
    window->compare()->addSlot();
    window->compare()->slots()[2]->load(translution_ckpt);
    window->compare()->slots()[3]->load(attention_ckpt);
    waitIdle();
    window->resize(1280, 800);
    for (int tab = 0; tab < 4; ++tab) {  // compare, attention, offset weights, training
      window->tabs()->setCurrentIndex(tab);
      settle();
      // The Compare and Training tabs' pages scroll on smaller screens; at 1280 x 800 the panels
      // themselves fit.
      const QWidget* page = tab == 0 ? compare : tab == 3 ? window->training() : window->tabs()->widget(tab);
      const QSize need = page->minimumSizeHint();
      QVERIFY2(need.width() <= 850 && need.height() <= 600,
               qPrintable(QString("tab %1 needs %2x%3").arg(tab).arg(need.width()).arg(need.height())));
    }
    // 850 px for the four slots: every control whole inside its slot, the slot inside the panel.
    auto* splitter = window->findChild<QSplitter*>("mainSplitter");
    splitter->setSizes({1280 - 850, 850});
    window->tabs()->setCurrentIndex(0);  // Compare
    settle();
    QVERIFY(window->tabs()->width() <= 860);
    for (SlotView* view : window->compare()->views()) {
      QVERIFY(compare->rect().contains(view->geometry()));
      for (QWidget* w : view->focusOrder()) {
        if (!w->isVisible()) continue;
        QVERIFY(view->rect().contains(w->geometry()));
        const int need = w->minimumWidth() > 0 ? w->minimumWidth() : w->minimumSizeHint().width();
        QVERIFY2(
            w->width() >= need,
            qPrintable(QString("%1 %2 < %3").arg(w->metaObject()->className()).arg(w->width()).arg(need)));
      }
      QVERIFY(view->chart()->height() >= 120);
      // The charts start level, however many lines each slot's details wrap to.
      QCOMPARE(view->chart()->mapTo(compare, QPoint()).y(),
               window->compare()->views()[0]->chart()->mapTo(compare, QPoint()).y());
    }
    auto* add = compare->findChild<QPushButton*>("addSlot");
    QVERIFY(compare->rect().contains(add->geometry()));
    // The attention views keep readable maps (they scroll instead of shrinking).
    window->tabs()->setCurrentWidget(window->attention());
    settle();
    const auto box_widths = [](const QWidget* view) {
      QList<int> widths;
      for (const QComboBox* box : view->findChildren<QComboBox*>()) widths << box->width();
      return widths;
    };
    for (AttentionView* view : window->attention()->views()) {
      QVERIFY(view->mainMap()->mapArea().width() >= 160);
      // Layer and head boxes alike in every slot, whatever its title leaves them.
      QCOMPARE(box_widths(view), box_widths(window->attention()->views()[0]));
    }
    window->compare()->removeSlot(window->compare()->slots().last());
    window->compare()->removeSlot(window->compare()->slots().last());
    settle();
    QCOMPARE(compare->minimumSizeHint().width(), two_slots);
  }

  void everyControlHasATooltip() {
    window->compare()->addSlot();
    const QList<QWidget*> panels = {window->compare(), window->attention(), window->offsets(),
                                    window->training()};
    int controls = 0;
    for (QWidget* panel : panels)
      for (QWidget* w : panel->findChildren<QWidget*>())
        if (is_control(w)) {
          ++controls;
          QVERIFY2(!w->toolTip().isEmpty(), qPrintable(QString("%1 '%2' in %3 has no tooltip")
                                                           .arg(w->metaObject()->className(), w->objectName(),
                                                                panel->metaObject()->className())));
        }
    QVERIFY(controls > 40);
  }

  void tabVisitsTheControlsInReadingOrder() {
    QList<QWidget*> compare = {window->compare()->findChild<QPushButton*>("addSlot")};
    for (SlotView* view : window->compare()->views()) {
      QComboBox* device = nullptr;
      for (QComboBox* box : view->findChildren<QComboBox*>())
        if (box != view->picker()) device = box;
      compare << view->picker() << device << view->findChild<QPushButton*>("removeSlot");
    }
    QCOMPARE(tab_order(compare), compare);
    TrainingPanel* t = window->training();
    const QList<QWidget*> training = {
        t->findChild<QComboBox*>("method"),         t->findChild<QComboBox*>("preset"),
        t->findChild<QComboBox*>("patch"),          t->findChild<QComboBox*>("layout"),
        t->findChild<QComboBox*>("dataset"),        t->findChild<QComboBox*>("trainingDevice"),
        t->findChild<QSpinBox*>("lorC1"),           t->findChild<QSpinBox*>("lorC2"),
        t->findChild<QCheckBox*>("lorShared"),      t->findChild<QComboBox*>("firstModel"),
        t->findChild<QSpinBox*>("firstBlocks"),     t->findChild<QSpinBox*>("batch"),
        t->findChild<QCheckBox*>("freshPositions"), t->sendButton()};
    QCOMPARE(tab_order(training), training);
  }

  // A checkpoint file is checked before it is read: the slot says why and keeps its model.
  void aSlotRefusesACheckpointThatWillNotFit() {
    qputenv("TRANSLUTION_AVAILABLE_MEMORY", "1000");
    ModelSlot* slot = window->compare()->slots()[1];
    QSignalSpy failed(slot, &ModelSlot::failed);
    slot->load(translution_ckpt);
    QTRY_COMPARE(failed.count(), 1);
    qunsetenv("TRANSLUTION_AVAILABLE_MEMORY");
    const QString why = failed.first().at(0).toString();
    QVERIFY2(
        why.startsWith("running translution ViT-tiny/12 (84x84) at batch 1") && why.contains("is available"),
        qPrintable(why));
    QCOMPARE(slot->source(), attention_ckpt);
  }
};

QTEST_MAIN(StudioPanelsTest)
#include "studio_panels_test.moc"
