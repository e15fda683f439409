// The papers' story as a new user meets it: the bundled model picker, the
// one-click demo with the centred-trained pair (its curves, its animation, its
// way back to the user's models), two to four slots, drawing at MNIST's scale,
// rollout and attention distance, progressive sweeps, the experiment runner,
// and the true class that follows the canvas.
#include <ATen/ATen.h>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardPaths>
#include <QStyle>
#include <QTemporaryDir>
#include <QtTest>

#include "attention_map.h"
#include "attention_panel.h"
#include "bundled_models.h"
#include "compare_panel.h"
#include "digit_canvas.h"
#include "elided_label.h"
#include "infer/attention_inspection.h"
#include "main_window.h"
#include "model_picker.h"
#include "model_slot.h"
#include "move_panel.h"
#include "offset_panel.h"
#include "protocol_box.h"
#include "protocol_table.h"
#include "robustness_panel.h"
#include "slot_view.h"
#include "sweep_panel.h"
#include "test_digit_source.h"
#include "train/checkpoint.h"
#include "train/translation_sweep.h"
#include "training_panel.h"
#include "ui_test_support.h"

using namespace translution;
using namespace translution::ui;
using namespace translution::ui::test;

class StudioStoryTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir;
  MainWindow* window = nullptr;

  void waitIdle(int ms = 60000) { QTRY_VERIFY_WITH_TIMEOUT(!window->busy(), ms); }
  void waitDigits() { QTRY_VERIFY_WITH_TIMEOUT(window->digits()->ready(), 60000); }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("TRANSLUTION_NO_DIALOGS", "1");
  }

  void init() {
    QSettings().clear();  // every test starts as a first launch
    window = new MainWindow(EngineOptions{}, qEnvironmentVariable("TRANSLUTION_DATA"));
    window->resize(1400, 800);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window));
    waitDigits();
    waitIdle();
  }

  void cleanup() {
    delete window;
    window = nullptr;
  }

  void theStudioOpensOnATestDigitWithTheBundledPair() {
    QVERIFY(!window->canvas()->inkBox().isEmpty());
    QCOMPARE(window->robustness()->trueClass(), 7);  // test digit 0 is a 7
    QCOMPARE(window->compare()->slots().size(), 2);
    QCOMPARE(QString::fromStdString(window->compare()->slots()[0]->predictor()->config().model),
             QString("translution"));
    QCOMPARE(QString::fromStdString(window->compare()->slots()[1]->predictor()->config().model),
             QString("attention"));
  }

  void thePickerListsTheSixBundledModelsAndLoadsOne() {
    QCOMPARE(bundled_model_list().size(), 6);
    ModelPicker* picker = window->compare()->views()[1]->picker();
    const QStringList sources = picker->sources();
    for (const char* name :
         {"translution", "lor", "attention", "translution-static", "lor-static", "attention-static"})
      QVERIFY2(sources.contains(bundled_model(name)), name);
    QCOMPARE(picker->currentText(), QString("Self-attention, trained on digits anywhere"));
    ModelSlot* slot = window->compare()->slots()[1];
    QSignalSpy loaded(slot, &ModelSlot::loaded);
    QVERIFY(picker->choose(bundled_model("lor-static")));
    QTRY_COMPARE(loaded.count(), 1);
    QCOMPARE(slot->source(), bundled_model("lor-static"));
    QCOMPARE(picker->currentText(), QString("LoR-Translution, trained on centred digits"));
    // Two models of one method side by side are told apart by what they were trained on.
    QVERIFY(window->compare()->views()[0]->picker()->choose(bundled_model("lor")));
    QTRY_COMPARE(window->compare()->views()[0]->titleText(), QString("A: LoR-Translution (D)"));
    QTRY_COMPARE(window->compare()->views()[1]->titleText(), QString("B: LoR-Translution (S)"));
    QVERIFY(window->compare()->views()[1]->findChild<ElidedLabel*>()->toolTip().contains(
        "(S): trained on centred digits"));
    QVERIFY(window->compare()->views()[0]->picker()->choose(bundled_model("translution")));
    QTRY_COMPARE(window->compare()->views()[0]->titleText(), QString("A: Translution (D)"));
    // Remembered: a new window starts with the same choice.
    delete window;
    window = new MainWindow(EngineOptions{}, qEnvironmentVariable("TRANSLUTION_DATA"));
    waitIdle();
    QCOMPARE(window->compare()->slots()[1]->source(), bundled_model("lor-static"));
  }

  void aBadFileOrAnotherCanvasSizeLeavesTheSlotAsItWas() {
    ModelSlot* slot = window->compare()->slots()[0];
    const QString before = slot->source();
    QFile bad(dir.filePath("bad.ckpt"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("not a checkpoint");
    bad.close();
    QSignalSpy failed(slot, &ModelSlot::failed);
    window->compare()->loadFile(slot, bad.fileName());
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(failed.last().at(0).toString().contains("bad.ckpt"));
    // A model of 28x28 images: refused with the sizes named.
    Checkpoint small;
    small.config = preset_config("tiny", "attention");
    small.config.image_height = small.config.image_width = 28;
    small.config.patch = 7;
    small.config.depth = 1;
    small.model = ViT(small.config);
    const QString path = dir.filePath("mnist28.ckpt");
    save_checkpoint(path.toStdString(), small);
    window->compare()->loadFile(slot, path);
    QTRY_COMPARE(failed.count(), 2);
    QVERIFY(failed.last().at(0).toString().contains("mnist28.ckpt"));
    QVERIFY(failed.last().at(0).toString().contains("28x28"));
    QCOMPARE(slot->source(), before);
    QVERIFY(slot->predictor() != nullptr);
    QCOMPARE(window->compare()->views()[0]->picker()->currentText(),
             QString("Translution, trained on digits anywhere"));
  }

  void theOneClickDemoShowsTheCentredTrainedGap() {
    RobustnessPanel* panel = window->robustness();
    QSignalSpy slid(panel, &RobustnessPanel::slid);
    panel->showCentredPair();
    QTRY_COMPARE_WITH_TIMEOUT(slid.count(), 1, 60000);
    waitIdle(300000);
    QCOMPARE(window->compare()->slots()[0]->source(), bundled_model("translution-static"));
    QCOMPARE(window->compare()->slots()[1]->source(), bundled_model("attention-static"));
    QCOMPARE(panel->trueClass(), 7);
    // The digit starts a whole patch left of the centre.
    QVERIFY(std::abs(window->canvas()->massCentre().x() - (42 - 12)) < 2.0);
    QCOMPARE(panel->movePlot()->graphCount(), 2);
    auto mean = [](QCPGraph* g) {
      double sum = 0;
      for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) sum += it->value;
      return sum / g->data()->size();
    };
    const double relative = mean(panel->movePlot()->graph(0)), absolute = mean(panel->movePlot()->graph(1));
    QVERIFY2(relative > absolute + 0.05, qPrintable(QString("%1 vs %2").arg(relative).arg(absolute)));
    QVERIFY(panel->movePlot()->graph(0)->name().contains("Translution, trained on centred digits"));
    // The protocol table filled from the bundled pairs: the relative encodings ahead on S->D.
    ProtocolTable* table = panel->protocolTable();
    const double translution =
        table->accuracy(ProtocolBox::pairName("translution", true), ProtocolTable::kStaticToDynamic);
    const double attention =
        table->accuracy(ProtocolBox::pairName("attention", true), ProtocolTable::kStaticToDynamic);
    const double lor = table->accuracy(ProtocolBox::pairName("lor", true), ProtocolTable::kStaticToDynamic);
    QVERIFY(translution > 0 && attention > 0 && lor > 0);
    QVERIFY(translution > attention && lor > attention);
    QVERIFY(table->accuracy(ProtocolBox::pairName("attention", true), ProtocolTable::kStaticToStatic) > 0.9);
    // In the methods' order, whichever pair finished first.
    QCOMPARE(table->rowOf(ProtocolBox::pairName("translution", true)), 0);
    QCOMPARE(table->rowOf(ProtocolBox::pairName("lor", true)), 1);
    QCOMPARE(table->rowOf(ProtocolBox::pairName("attention", true)), 2);
    // With its curves and story, the tab still fits the room a 1280 x 800 screen leaves it (about 850 x 600).
    const QSize least = panel->minimumSizeHint();
    qInfo("the Robustness tab needs at least %dx%d", least.width(), least.height());
    QVERIFY2(least.width() <= 850 && least.height() <= 600,
             qPrintable(QString("%1x%2").arg(least.width()).arg(least.height())));
    // The canvas says what it holds, as the main window words a placed test digit.
    QCOMPARE(window->canvas()->origin().label, 7);
    QCOMPARE(window->canvas()->origin().description, QString("test #0 (label 7, static)"));
    // What the story beside the plot says: Translution comes back up at the whole-patch shifts and dips
    // between.
    const SlidePath& path = panel->movePanel()->path();
    QVERIFY(path.whole_patch.size() >= 4);
    QVERIFY(path.whole_patch.contains(path.anchor));
    QVERIFY(std::abs(path.along(path.anchor) - 42) <=
            0.5);                   // training's place: the centre of mass at the centre
    for (int i : path.whole_patch)  // the frames a whole patch apart from it, exactly
      QCOMPARE(int(std::lround(path.along(i) - path.along(path.anchor))) % 12, 0);
    const QCPGraph* curve = panel->movePlot()->graph(0);
    double on = 0, between = 0;
    for (int i = 0; i < path.size(); ++i)
      (path.whole_patch.contains(i) ? on : between) += curve->data()->at(i)->value;
    on /= path.whole_patch.size();
    between /= path.size() - path.whole_patch.size();
    QVERIFY2(on > 0.8 && on > between + 0.3,
             qPrintable(QString("on the lines %1, between %2").arg(on).arg(between)));
    // No-break spaces keep a slot's numbers together; read them as spaces.
    const QString story = panel->movePanel()->story().replace(QChar(0x00a0), ' ');
    const QString on_lines = QString("A %1").arg(on, 0, 'f', 2);  // the plot's own number, in the story
    QVERIFY2(story.contains("whole patches") && story.contains("S→D") && story.contains(on_lines),
             qPrintable(story));
    // A third slot: the legend takes the short titles, which share rows, and the story says what
    // their marks mean.
    window->tabs()->setCurrentWidget(panel);  // laid out at the window's width, as a user sees it
    ModelSlot* third = window->compare()->addSlot();
    QVERIFY(third != nullptr);
    third->load(bundled_model("lor-static"));
    waitIdle(300000);
    panel->slideAcross();
    QTRY_COMPARE_WITH_TIMEOUT(slid.count(), 2, 60000);
    waitIdle(300000);
    QCOMPARE(panel->movePlot()->graphCount(), 3);
    QCOMPARE(panel->movePlot()->graph(0)->name(), QString("A: Translution (S)"));
    QCOMPARE(panel->movePlot()->graph(2)->name(), QString("C: LoR-Translution (S)"));
    panel->movePlot()->replot();  // the legend wraps before each replot, to the plot's width
    QVERIFY2(panel->movePlot()->legend->wrap() > 1, qPrintable(QString("%1 columns in %2 px")
                                                                   .arg(panel->movePlot()->legend->wrap())
                                                                   .arg(panel->movePlot()->width())));
    QVERIFY2(panel->movePanel()->story().contains("(S) trained on centred digits."),
             qPrintable(panel->movePanel()->story()));
    QVERIFY(!panel->movePanel()->story().contains("(D)"));  // no model here was trained on moved digits
    // The slider's handle stands under the plot's marker: at the path's first and last frames it
    // sits where the x axis puts them.
    auto* scrub = panel->findChild<QSlider*>("moveScrub");
    QVERIFY(scrub != nullptr && scrub->maximum() > 0);
    const SlidePath& slid_path = panel->movePanel()->path();
    const int half = scrub->style()->pixelMetric(QStyle::PM_SliderLength, nullptr, scrub) / 2;
    for (const int v : {0, scrub->maximum()}) {
      const double handle = scrub->mapTo(panel, QPoint(0, 0)).x() + half +
                            double(scrub->width() - 2 * half) * v / scrub->maximum();
      const double axis = panel->movePlot()->mapTo(panel, QPoint(0, 0)).x() +
                          panel->movePlot()->xAxis->coordToPixel(slid_path.along(v));
      QVERIFY2(std::abs(handle - axis) <= 3,
               qPrintable(QString("frame %1: handle at %2, axis at %3").arg(v).arg(handle).arg(axis)));
    }
  }

  void theDemoGoesBackToTheUsersModels() {
    ModelSlot* a = window->compare()->slots()[0];
    ModelSlot* b = window->compare()->slots()[1];
    const QString user_a = a->source(), user_b = b->source();
    auto* back = window->robustness()->findChild<QPushButton*>("restoreModels");
    QVERIFY(back != nullptr && !back->isEnabled());  // nothing to restore yet
    QSignalSpy slid(window->robustness(), &RobustnessPanel::slid);
    window->robustness()->findChild<QPushButton*>("centredPairDemo")->click();
    QTRY_COMPARE_WITH_TIMEOUT(slid.count(), 1, 60000);
    waitIdle(300000);
    QCOMPARE(a->source(), bundled_model("translution-static"));
    QVERIFY(back->isEnabled());
    window->robustness()->showCentredPair();  // a second click keeps the first one's models to go back to
    QTRY_COMPARE_WITH_TIMEOUT(slid.count(), 2, 60000);
    waitIdle(300000);
    back->click();
    waitIdle();
    QCOMPARE(a->source(), user_a);
    QCOMPARE(b->source(), user_b);
    QVERIFY(!back->isEnabled());
    // A slot the user changed after the demo is theirs: nothing of it to go back to.
    window->robustness()->showCentredPair();
    QTRY_COMPARE_WITH_TIMEOUT(slid.count(), 3, 60000);
    waitIdle(300000);
    b->load(bundled_model("lor"));
    waitIdle();
    back->click();
    waitIdle();
    QCOMPARE(a->source(), user_a);
    QCOMPARE(b->source(), bundled_model("lor"));
  }

  void theSlideMovesTheDigitAcrossWithTheMarker() {
    window->tabs()->setCurrentWidget(window->robustness());
    RobustnessPanel* panel = window->robustness();
    DigitCanvas* canvas = window->canvas();
    QSignalSpy slid(panel, &RobustnessPanel::slid);
    panel->showCentredPair();
    QTRY_COMPARE_WITH_TIMEOUT(slid.count(), 1, 60000);
    QVERIFY(panel->movePanel()->animating());
    const SlidePath path = panel->movePanel()->path();
    QCOMPARE(canvas->positionMarks().size(), path.whole_patch.size());  // rings at the whole-patch positions
    // Every frame the canvas shows: the plot's marker stands where the digit's centre is.
    QList<double> centres;
    int marker_off = 0;
    auto frames = connect(canvas, &DigitCanvas::canvasChanged, this, [&] {
      const double x = canvas->massCentre().x();
      centres << x;
      if (std::abs(panel->movePanel()->markerPosition() - x) > 1e-6) ++marker_off;
    });
    QElapsedTimer timer;
    timer.start();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->movePanel()->animating(), 60000);
    const double seconds = timer.elapsed() / 1000.0;
    disconnect(frames);
    QVERIFY2(centres.size() >= path.size() - 1,
             qPrintable(QString("%1 frames of %2").arg(centres.size()).arg(path.size())));
    QVERIFY(*std::max_element(centres.begin(), centres.end()) -
                *std::min_element(centres.begin(), centres.end()) >
            40);
    QCOMPARE(marker_off, 0);
    qInfo("%d frames in %.2f s", int(centres.size()), seconds);     // the timer asks for one every 60 ms
    QVERIFY(std::abs(canvas->massCentre().x() - (42 - 12)) < 2.0);  // back where the slide found it
    // The filled ring is the current whole-patch position; the slider puts the digit on each.
    auto* slider = panel->movePanel()->findChild<QSlider*>();
    slider->setValue(path.whole_patch[1]);
    const QPointF placed = canvas->massCentre() - path.centres[path.whole_patch[1]];
    QVERIFY(std::abs(placed.x()) < 1e-4 && std::abs(placed.y()) < 1e-4);
    QCOMPARE(canvas->origin().label, 7);  // moved, still the test digit
    QVERIFY(std::abs(panel->movePanel()->markerPosition() - path.along(path.whole_patch[1])) < 1e-9);
    // Stoppable: a second slide stopped at once leaves the digit where it got to.
    panel->slideAcross();
    QTRY_VERIFY_WITH_TIMEOUT(panel->movePanel()->animating(), 60000);
    panel->movePanel()->stopSlide();
    QVERIFY(!panel->movePanel()->animating());
    QVERIFY(!panel->movePanel()->busy());
    // Hidden, the Move panel takes its rings off the canvas; shown, it puts them back.
    window->tabs()->setCurrentIndex(0);
    QVERIFY(canvas->positionMarks().isEmpty());
    window->tabs()->setCurrentWidget(panel);
    QCOMPARE(canvas->positionMarks().size(), path.whole_patch.size());
    // A new drawing: the path and its rings are gone.
    canvas->clear();
    QVERIFY(canvas->positionMarks().isEmpty());
    QVERIFY(panel->movePanel()->path().empty());
  }

  void theTrueClassIsTheCanvasOrigins() {
    RobustnessPanel* panel = window->robustness();
    DigitCanvas* canvas = window->canvas();
    const at::Tensor pixels = canvas->pixels();
    canvas->setPixels(pixels, CanvasOrigin{3, "a 3"});
    QCOMPARE(panel->trueClass(), 3);
    canvas->setPixels(pixels, CanvasOrigin{5, "a 5"});
    QCOMPARE(panel->trueClass(), 5);
    canvas->undo();  // the origin travels with undo
    QCOMPARE(panel->trueClass(), 3);
    canvas->nudge(3, 0);  // and with moves
    QCOMPARE(panel->trueClass(), 3);
    canvas->setPixels(pixels);  // unknown: the slots' majority (both read test digit 0 as a 7)
    waitIdle();
    QCOMPARE(panel->trueClass(), 7);
  }

  void sweepsShowACoarseMapThenTheChosenOne() {
    RobustnessPanel* panel = window->robustness();
    SweepPanel* sweep = panel->sweepPanel();
    for (QSpinBox* box : sweep->findChildren<QSpinBox*>()) {
      if (box->toolTip().startsWith("The first N test digits")) box->setValue(10);
      if (box->toolTip().startsWith("Pixels between")) box->setValue(4);
    }
    QStringList progress;
    QList<int> cells;
    QSignalSpy passes(panel, &RobustnessPanel::sweepPassShown);
    auto watch = connect(panel, &RobustnessPanel::sweepPassShown, this, [&] {
      progress << sweep->progressText();
      cells << sweep->sweepMaps()->map(0)->data()->keySize();
    });
    panel->runSweep();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 300000);
    disconnect(watch);
    QCOMPARE(passes.count(), 2);
    QCOMPARE(passes[0], (QList<QVariant>{0, 2}));
    QVERIFY2(progress[0].contains("Pass 1 of 2") && progress[0].contains("coarse"), qPrintable(progress[0]));
    QCOMPARE(cells[0], 29);  // every 6 px and the last position (56): a 2 px grid of cells
    QCOMPARE(cells[1], 15);  // every 4 px
    QCOMPARE(sweep->sweepMaps()->mapCount(), 2);
    // The refined map is the one-shot sweep of the chosen settings, cell by cell.
    const auto predictor = window->compare()->slots()[0]->predictor();
    const MnistDigits test = load_mnist(window->digits()->dataDir().toStdString(), Split::Test);
    const SweepResult one_shot = translation_sweep(predictor->engine(), predictor->model(), test,
                                                   SweepOptions{10, 4}, predictor->device());
    QCPColorMapData* map = sweep->sweepMaps()->map(0)->data();
    for (int yi = 0; yi < 15; ++yi)
      for (int xi = 0; xi < 15; ++xi) QCOMPARE(map->cell(xi, yi), one_shot.accuracy[yi][xi].item<double>());
    // Saved as CSV: one file per map; a folder is refused with its name, and nothing crashes.
    QCOMPARE(sweep->saveCsv(dir.filePath("maps.csv")), QString());
    QVERIFY(QFile::exists(dir.filePath("maps-A-Translution-D.csv")));
    QVERIFY(QFile::exists(dir.filePath("maps-B-Self-attention-D.csv")));
    QVERIFY(
        QDir(dir.path()).mkpath("taken-B-Self-attention-D.csv"));  // a folder where the second file would go
    const QString refused = sweep->saveCsv(dir.filePath("taken.csv"));
    QVERIFY2(refused.contains("taken-B-Self-attention-D.csv"), qPrintable(refused));
    QVERIFY(sweep->note().contains(refused));
  }

  void aThirdSlotAppearsInEveryPanelAndGoesAgain() {
    ComparePanel* compare = window->compare();
    ModelSlot* c = compare->addSlot();
    QVERIFY(c != nullptr);
    QCOMPARE(c->name(), QString("C"));
    c->load(bundled_model("lor"));
    waitIdle();
    QCOMPARE(window->attention()->views().size(), 3);
    QCOMPARE(window->offsets()->findChild<QComboBox*>("offsetSlot")->count(), 3);
    QVERIFY(c->lastPrediction().has_value());  // it predicts the canvas the others show
    QVERIFY(window->attention()->views()[2]->mainMap()->hasData());
    QVERIFY(compare->addSlot() != nullptr);
    QVERIFY(compare->addSlot() == nullptr);  // four at most
    QVERIFY(compare->removeSlot(compare->slots()[1]));
    QCOMPARE(compare->slots().size(), 3);
    QCOMPARE(compare->slots()[1]->name(), QString("C"));
    QCOMPARE(window->attention()->views().size(), 3);
    QCOMPARE(window->offsets()->findChild<QComboBox*>("offsetSlot")->count(), 3);
    QVERIFY(compare->removeSlot(compare->slots()[2]));
    QVERIFY(!compare->removeSlot(compare->slots()[1]));  // two at least
    QCOMPARE(compare->addSlot()->name(), QString("B"));  // the first free letter
  }

  void aDrawingFarLargerThanMnistIsFlaggedAndFitted() {
    DigitCanvas* canvas = window->canvas();
    canvas->clear();
    QVERIFY(canvas->guideVisible());
    QCOMPARE(canvas->guideBox().width(), 20.0);
    QVERIFY(!window->scaleWarningVisible());
    // A 7 drawn across the whole canvas.
    drag(canvas, widget_pos(*canvas, 10, 10), widget_pos(*canvas, 74, 10));
    drag(canvas, widget_pos(*canvas, 74, 10), widget_pos(*canvas, 30, 76));
    QVERIFY(window->scaleWarningVisible());
    QVERIFY(window->fitToMnist());
    QVERIFY(!window->scaleWarningVisible());
    const QRect ink = canvas->inkBox();
    QVERIFY2(ink.height() <= 21 && ink.width() <= 21,
             qPrintable(QString("%1x%2").arg(ink.width()).arg(ink.height())));
    const QPointF centre = canvas->massCentre();
    QVERIFY(std::abs(centre.x() - 42) < 1.5 && std::abs(centre.y() - 42) < 1.5);
  }

  void rolloutRowsAreDistributionsAndDistancesArePlotted() {
    AttentionView* view = window->attention()->views()[0];
    view->setRollout(true);
    QVERIFY(view->rollout());
    const at::Tensor weights = view->mainMap()->patchWeights();
    QVERIFY(weights.defined());
    const auto& prediction = view->slot()->lastPrediction();
    const at::Tensor rollout = attention_rollout(prediction->attention);
    for (int64_t i = 0; i < rollout.size(0); ++i)
      QVERIFY(std::abs(rollout[i].sum().item<double>() - 1) < 1e-6);
    QVERIFY(at::allclose(weights.flatten().to(at::kDouble), rollout[0].narrow(0, 1, 49), 1e-5, 1e-6));
    // One curve per head, one point per layer.
    QCOMPARE(view->distancePlot()->graphCount(), int(prediction->attention.front().size(0)));
    QCOMPARE(view->distancePlot()->graph(0)->dataCount(), int(prediction->attention.size()));
  }

  void offsetContributionsFollowTheCanvas() {
    OffsetPanel* panel = window->offsets();
    panel->findChild<QComboBox*>("offsetView")->setCurrentIndex(1);
    waitIdle();
    QVERIFY(panel->showingContributions());
    QCOMPARE(panel->heatMapCount(), 4);  // the bundled Translution: its value matrices in each of 4 layers
    QVERIFY2(panel->message().contains("this canvas"), qPrintable(panel->message()));
    const QString before = panel->describeCell(0, 6, 6);  // offset (0, 0) of layer 1
    QVERIFY(before.contains("offset (dx 0, dy 0)"));
    QVERIFY(window->showTestDigit(CanvasKind::Dynamic, 5));
    waitIdle();
    QVERIFY(panel->describeCell(0, 6, 6) != before);                 // recomputed for the new digit
    panel->findChild<QComboBox*>("offsetSlot")->setCurrentIndex(1);  // self-attention: nothing offset-indexed
    waitIdle();
    QCOMPARE(panel->heatMapCount(), 0);
  }

  void theTrueClassFollowsTheCanvas() {
    RobustnessPanel* panel = window->robustness();
    QVERIFY(window->showTestDigit(CanvasKind::Static, 1));  // a 2
    QCOMPARE(panel->trueClass(), 2);
    window->canvas()->nudge(5, 0);  // a moved test digit is still that digit
    waitIdle();
    QCOMPARE(panel->trueClass(), 2);
    QVERIFY(window->showTestDigit(CanvasKind::Static, 0));  // a 7, which both models read as 7...
    waitIdle();
    window->canvas()->clear();  // ...then the user draws: the slots' majority decides
    drag(window->canvas(), widget_pos(*window->canvas(), 42, 30), widget_pos(*window->canvas(), 42, 50));
    waitIdle();
    // The majority of the slots' predictions, ties to the lower class.
    int votes[10] = {};
    for (ModelSlot* s : window->compare()->slots()) ++votes[s->lastPrediction()->predicted];
    QCOMPARE(panel->trueClass(), int(std::max_element(votes, votes + 10) - votes));
    QVERIFY(panel->trueClass() != 7 || votes[7] > 0);
  }

  void theExperimentTrainsBothDatasetsAndFillsTheTable() {
    ProtocolBox* box = window->robustness()->protocol();
    box->setMethods({"lor", "attention"});
    ExperimentBudget tiny;
    tiny.train_digits = 256;
    tiny.depth = 1;
    tiny.test_digits = 100;
    tiny.layout = "sequence";  // 1-D offsets: the layout reaches every model the experiment trains
    box->setBudget(tiny);
    QCOMPARE(QString::fromStdString(box->budget().layout), QString("sequence"));
    QSignalSpy finished(box, &ProtocolBox::finished);
    QSignalSpy swept(box, &ProtocolBox::sweepReady);
    box->runExperiment();
    QVERIFY(box->runner()->running());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 600000);
    QVERIFY2(box->status().startsWith("Experiment done"), qPrintable(box->status()));
    for (const char* m : {"lor", "attention"})
      for (auto column : {ProtocolTable::kStaticToStatic, ProtocolTable::kDynamicToDynamic,
                          ProtocolTable::kStaticToDynamic})
        QVERIFY(box->table()->accuracy(ProtocolBox::pairName(m, false), column) >= 0);
    QCOMPARE(swept.count(), 2);
    QCOMPARE(window->robustness()->sweepMaps()->mapCount(), 2);
    // A trained model goes to a slot.
    ModelSlot* slot = window->compare()->slots()[1];
    QCOMPARE(box->sendToSlot("lor/static", slot), QString());
    QCOMPARE(QString::fromStdString(slot->predictor()->config().model), QString("lor"));
    QCOMPARE(slot->predictor()->metadata().at("dataset"), std::string("static"));
    QCOMPARE(QString::fromStdString(slot->predictor()->config().layout), QString("sequence"));
  }

  void trainingLegendsNameTheMethodDatasetAndSize() {
    TrainingPanel* panel = window->training();
    panel->setQuickRun(20, 128);
    QSignalSpy finished(panel, &TrainingPanel::runFinished);
    panel->startRun();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    const QString name = panel->lossPlot()->graph(0)->name();
    QVERIFY2(name.contains("lor") && name.contains("dynamic") && name.contains("tiny/12"), qPrintable(name));
  }
};

QTEST_MAIN(StudioStoryTest)
#include "studio_story_test.moc"
