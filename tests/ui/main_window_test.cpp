// The main window as a user meets it: a canvas that stays put under the pen, a
// status bar that says what the canvas shows through every edit, the menu bar's
// commands, pictures of a view, and the layout audit that keeps every widget
// readable (proven to catch a layout broken on purpose).
#include "main_window.h"

#include <ATen/ATen.h>
#include <QAction>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QScrollArea>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtTest>
#include <sys/stat.h>

#include "compare_panel.h"
#include "digit_canvas.h"
#include "layout_audit.h"
#include "model_slot.h"
#include "reflow_layout.h"
#include "robustness_panel.h"
#include "slot_view.h"
#include "test_digit_source.h"
#include "training_panel.h"
#include "ui_test_support.h"

using namespace translution;
using namespace translution::ui;
using namespace translution::ui::test;

namespace {

// The action with `shortcut` in the menu bar's menus (and their submenus).
QAction* find_action(const QList<QAction*>& actions, const QString& shortcut) {
  for (QAction* action : actions) {
    if (action->shortcut() == QKeySequence(shortcut)) return action;
    if (action->menu())
      if (QAction* found = find_action(action->menu()->actions(), shortcut)) return found;
  }
  return nullptr;
}
QAction* find_action(QMenuBar* bar, const QString& shortcut) { return find_action(bar->actions(), shortcut); }

QByteArray head_of(const QString& path, int bytes) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.read(bytes) : QByteArray();
}

// Named as the offender or as what it collides with (an overlapping pair is reported once).
bool mentions(const LayoutAuditResult& result, const QString& name) {
  for (const LayoutOffender& o : result.offenders)
    if (o.object.contains(name) || o.problem.contains(name)) return true;
  return false;
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir;
  MainWindow* window = nullptr;

  void waitIdle() { QTRY_VERIFY_WITH_TIMEOUT(!window->busy(), 60000); }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("TRANSLUTION_NO_DIALOGS", "1");
  }

  void init() {
    QSettings().clear();  // every test starts as a first launch
    window = new MainWindow(EngineOptions{}, qEnvironmentVariable("TRANSLUTION_DATA"));
    window->resize(1280, 800);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window));
    QTRY_VERIFY_WITH_TIMEOUT(window->digits()->ready(), 60000);
    waitIdle();
  }

  void cleanup() {
    delete window;
    window = nullptr;
  }

  // A stroke that grows the ink past the size warning's threshold while the button is
  // down: the canvas keeps its place and size, and the ink lands under the pointer.
  void aLongStrokeKeepsTheCanvasStillAndTheInkUnderThePointer() {
    DigitCanvas* canvas = window->canvas();
    canvas->clear();
    QApplication::processEvents();
    const QRect before = canvas->geometry();
    const QPointF from = widget_pos(*canvas, 10, 42), to = widget_pos(*canvas, 74, 42);
    send_mouse(canvas, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
    for (int i = 1; i <= 32; ++i) {
      send_mouse(canvas, QEvent::MouseMove, from + (to - from) * (i / 32.0), Qt::NoButton, Qt::LeftButton);
      QApplication::processEvents();
      QCOMPARE(canvas->geometry(), before);
    }
    QVERIFY(window->scaleWarningVisible());  // the ink is 64 px wide: the warning shows, in its own room
    QApplication::processEvents();
    QCOMPARE(canvas->geometry(), before);
    // Every canvas pixel the pointer passed over is inked, after the layout had its chance to move.
    const QPointF next_from = widget_pos(*canvas, 42, 10), next_to = widget_pos(*canvas, 42, 74);
    for (int i = 0; i <= 16; ++i)
      send_mouse(canvas, QEvent::MouseMove, next_from + (next_to - next_from) * (i / 16.0), Qt::NoButton,
                 Qt::LeftButton);
    send_mouse(canvas, QEvent::MouseButtonRelease, next_to, Qt::LeftButton, Qt::NoButton);
    const at::Tensor ink = canvas->pixels();
    for (int x = 10; x <= 74; x += 4)
      QVERIFY2(ink[42][x].item<float>() > 0.9f, qPrintable(QString::number(x)));
    for (int y = 10; y <= 74; y += 4)
      QVERIFY2(ink[y][42].item<float>() > 0.9f, qPrintable(QString::number(y)));
    QCOMPARE(ink[20][20].item<float>(), 0.0f);
    QCOMPARE(canvas->geometry(), before);
  }

  void theStatusFollowsTheCanvasThroughEveryEdit() {
    DigitCanvas* canvas = window->canvas();
    QVERIFY(window->showTestDigit(CanvasKind::Dynamic, 3343));
    const int label = canvas->origin().label;
    QVERIFY(label >= 0 && label <= 9);
    const QString digit = QString("test #3343 (label %1, dynamic)").arg(label);
    QVERIFY2(window->canvasStatus().contains(digit), qPrintable(window->canvasStatus()));
    canvas->nudge(2, 1);  // a move keeps what the digit is
    QVERIFY(window->canvasStatus().contains(digit));
    drag(canvas, widget_pos(*canvas, 5, 5), widget_pos(*canvas, 12, 5));
    QVERIFY2(window->canvasStatus().contains("your drawing"), qPrintable(window->canvasStatus()));
    QVERIFY(!window->canvasStatus().contains("label"));
    canvas->undo();
    QVERIFY2(window->canvasStatus().contains(digit), qPrintable(window->canvasStatus()));
    canvas->clear();
    QVERIFY(window->canvasStatus().startsWith("Empty canvas"));
    canvas->undo();
    QVERIFY(window->canvasStatus().contains(digit));
    QVERIFY(window->showTestDigit(CanvasKind::Static, 0));  // a 7
    QVERIFY(window->canvasStatus().contains("label 7, static"));
    canvas->undo();
    QVERIFY(window->canvasStatus().contains(digit));
  }

  void theMenusHoldTheDesktopConventions() {
    QMenuBar* bar = window->menuBar();
    QCOMPARE(bar->actions().size(), 3);  // File, View, Help
    for (const char* shortcut : {"Ctrl+O", "Ctrl+S", "Ctrl+Q", "Ctrl+1", "Ctrl+5", "F1"})
      QVERIFY2(find_action(bar, shortcut), shortcut);
    find_action(bar, "Ctrl+3")->trigger();
    QCOMPARE(window->tabs()->currentIndex(), 2);
    for (int i = 0; i < window->tabs()->count(); ++i) QVERIFY(!window->helpText(i).isEmpty());
    QAction* add = find_action(bar, "Ctrl+Shift+N");
    QAction* remove = find_action(bar, "Ctrl+Shift+W");
    QVERIFY(add && remove && add->isEnabled() && !remove->isEnabled());
    add->trigger();
    QCOMPARE(window->compare()->slots().size(), 3);
    QVERIFY(remove->isEnabled());
    remove->trigger();
    QCOMPARE(window->compare()->slots().size(), 2);
  }

  void aPictureOfTheViewIsWrittenWholeInEachFormat() {
    const QString base = dir.filePath("view");
    QCOMPARE(window->savePicture(base + ".png"), QString());
    QCOMPARE(head_of(base + ".png", 4), QByteArray("\x89PNG"));
    QCOMPARE(window->savePicture(base + ".svg"), QString());
    QVERIFY(head_of(base + ".svg", 400).contains("<svg"));
    QCOMPARE(window->savePicture(base + ".pdf"), QString());
    QCOMPARE(head_of(base + ".pdf", 4), QByteArray("%PDF"));
    QVERIFY(window->savePicture(base + ".bmp").contains(".png, .svg or .pdf"));
  }

  // Never replaced: a FIFO or a folder at the path stays what it was, and the message names the path.
  void aPictureNeverReplacesWhatIsNotAFile() {
    const QString fifo = dir.filePath("pipe.png");
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
    const QString fifo_error = window->savePicture(fifo);
    QVERIFY2(fifo_error.contains(fifo) && fifo_error.contains("FIFO"), qPrintable(fifo_error));
    struct stat st {};
    QCOMPARE(::stat(QFile::encodeName(fifo).constData(), &st), 0);
    QVERIFY(S_ISFIFO(st.st_mode));
    QVERIFY(QDir(dir.path()).mkdir("folder.png"));
    QVERIFY(window->savePicture(dir.filePath("folder.png")).contains("a directory"));
    QVERIFY(QFileInfo(dir.filePath("folder.png")).isDir());
  }

  // Four slots sit side by side where the window holds them and two by two where it does not,
  // so they never widen the window; removing them leaves its minimum as it was. Their details
  // follow each arrangement's width.
  // The digits' tool bar goes beneath the canvas's where both do not fit in a row, so no tool
  // hides behind an overflow button, and back beside it where they fit.
  void theToolBarsWrapRatherThanHideTools() {
    auto* canvas_bar = window->findChild<QToolBar*>("canvasToolBar");
    auto* digits_bar = window->findChild<QToolBar*>("digitsToolBar");
    QVERIFY(canvas_bar && digits_bar);
    QVERIFY(!window->toolBarBreak(digits_bar));
    QCOMPARE(digits_bar->y(), canvas_bar->y());
    window->resize(800, 600);
    QTRY_VERIFY(window->toolBarBreak(digits_bar));
    QTRY_VERIFY(digits_bar->y() > canvas_bar->y());
    for (QAction* action : digits_bar->actions())
      if (QWidget* button = digits_bar->widgetForAction(action))
        QVERIFY2(button->isVisible() && button->geometry().right() <= digits_bar->width(),
                 qPrintable(action->text()));
    window->resize(1280, 800);
    QTRY_VERIFY(!window->toolBarBreak(digits_bar));
  }

  void fourSlotsSitTwoByTwoInANarrowWindow() {
    window->tabs()->setCurrentIndex(0);
    const int two = window->minimumSizeHint().width();
    window->compare()->addSlot();
    window->compare()->addSlot();
    QApplication::processEvents();
    QCOMPARE(window->minimumSizeHint().width(), two);
    const QList<SlotView*>& views = window->compare()->views();
    const auto tops = [&views] {
      QList<int> y;
      for (const SlotView* v : views) y << v->mapTo(v->window(), QPoint(0, 0)).y();
      return y;
    };
    const auto text = [](const QList<int>& y) {
      QStringList parts;
      for (int v : y) parts << QString::number(v);
      return "slot tops " + parts.join(", ");
    };
    // Every slot's details as tall as the most any slot's text needs at its width, no taller:
    // the height of a narrower layout is given back.
    const auto details_fit = [&views] {
      int most = 0;
      QList<QLabel*> labels;
      for (const SlotView* v : views) {
        QLabel* d = v->findChild<QLabel*>("slotDetails");
        labels << d;
        most = std::max(most, d->fontMetrics()
                                  .boundingRect(QRect(0, 0, d->contentsRect().width(), 1 << 20),
                                                Qt::TextWordWrap, d->text())
                                  .height());
      }
      for (const QLabel* d : labels)
        if (d->height() < most || d->height() > std::max(most, 3 * d->fontMetrics().lineSpacing()) + 2)
          return QString("details %1 px for a need of %2 px").arg(d->height()).arg(most);
      return QString();
    };
    window->resize(1280, 800);
    QApplication::processEvents();
    QList<int> y = tops();
    QVERIFY2(y[0] == y[1] && y[1] == y[2] && y[2] == y[3], qPrintable(text(y)));
    QTRY_COMPARE(details_fit(), QString());
    window->resize(two, 700);
    QApplication::processEvents();
    y = tops();
    QVERIFY2(y[0] == y[1] && y[2] == y[3] && y[2] > y[0] + views[0]->height() / 2, qPrintable(text(y)));
    QTRY_COMPARE(details_fit(), QString());
    // The height a narrower layout gave the details does not count as their need.
    views[0]->setDetailsHeight(300);
    QVERIFY2(views[0]->detailsNeed() < 300, qPrintable(QString::number(views[0]->detailsNeed())));
    window->compare()->removeSlot(window->compare()->slots().last());
    window->compare()->removeSlot(window->compare()->slots().last());
    QApplication::processEvents();
    QCOMPARE(window->minimumSizeHint().width(), two);
  }

  // The audit is only worth its zero if it sees a broken layout: a button beside the canvas
  // that insists on 3000 px (the window cannot fit the screen), and a widget forced over its
  // siblings.
  void theLayoutAuditCatchesALayoutBrokenOnPurpose() {
    const LayoutAuditResult clean = audit_layout(window, window->tabs(), QSize(1280, 800));
    QVERIFY(clean.widgets > 100);
    QCOMPARE(clean.tabs, window->tabs()->count() + 2);  // and the Robustness tab's two other pages
    QWidget* canvas_pane = window->canvas()->parentWidget();
    auto* wide = new QPushButton("far too wide", canvas_pane);
    wide->setObjectName("brokenOnPurpose");
    wide->setMinimumWidth(3000);
    canvas_pane->layout()->addWidget(wide);
    auto* stray = new QPushButton("stray", window->compare());
    stray->setObjectName("strayOnPurpose");
    stray->setGeometry(0, 0, 200, 200);  // outside any layout, over the panel's first row
    stray->show();
    const LayoutAuditResult broken = audit_layout(window, window->tabs(), QSize(1280, 800));
    QString found;
    for (const LayoutOffender& o : broken.offenders) found += describe(o) + "\n";
    QVERIFY2(broken.offenders.size() > clean.offenders.size(), qPrintable(found));
    QVERIFY2(mentions(broken, "strayOnPurpose"), qPrintable(found));  // over its siblings
    QVERIFY2(found.contains("the window needs at least") || found.contains("larger than the screen"),
             qPrintable(found));  // 3000 px cannot fit
  }

  // A page wider than its tab scrolls, so the window still fits, but sideways; the audit
  // names the part that is too wide.
  void theLayoutAuditCatchesAPageThatScrollsSideways() {
    QWidget* page = window->training()->findChild<QScrollArea*>()->widget();  // the form and curves
    auto* sideways = new QPushButton("wider than the page", page);
    sideways->setObjectName("sidewaysOnPurpose");
    sideways->setMinimumWidth(1500);
    page->layout()->addWidget(sideways);
    const LayoutAuditResult scrolling = audit_layout(window, window->tabs(), QSize(1280, 800));
    QString found;
    for (const LayoutOffender& o : scrolling.offenders) found += describe(o) + "\n";
    QVERIFY2(found.contains("tab 'Training'") && found.contains("scrolls sideways"), qPrintable(found));
    QVERIFY2(found.contains("sidewaysOnPurpose (QPushButton) alone needs 1500 px"), qPrintable(found));
    QVERIFY2(!found.contains("larger than the screen"), qPrintable(found));
  }

  // Parts side by side where the width holds their minimums, else stacked; the page's
  // height follows, and the spare width goes by the columns' stretch factors.
  void aReflowLayoutStacksItsPartsWhenTheyDoNotFitSideBySide() {
    QWidget page;
    auto* reflow = new ReflowLayout(2, &page);
    reflow->setContentsMargins(0, 0, 0, 0);
    reflow->setSpacing(10);
    auto* first = new QPushButton("first");
    first->setMinimumSize(300, 40);
    first->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    auto* growing = new QPushButton("growing");
    growing->setMinimumSize(200, 40);
    growing->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    reflow->addWidget(first);
    reflow->addWidget(growing);
    reflow->setColumnStretch(0, 0);
    QCOMPARE(reflow->minimumSize().width(), 300);  // stacked, no narrower than the wider part

    reflow->setGeometry(QRect(0, 0, 700, reflow->heightForWidth(700)));
    QCOMPARE(reflow->columnsFor(700), 2);
    QCOMPARE(first->geometry(), QRect(0, 0, 300, first->height()));
    QCOMPARE(growing->geometry().left(), 310);
    QCOMPARE(growing->geometry().right(), 699);  // the 190 px to spare went to the stretching column
    QCOMPARE(growing->geometry().top(), 0);
    reflow->setColumnStretch(0, 1);  // shared alike: 95 px each
    reflow->setGeometry(QRect(0, 0, 700, reflow->heightForWidth(700)));
    QCOMPARE(first->geometry().width(), 395);
    QCOMPARE(growing->geometry().left(), 405);

    QCOMPARE(reflow->columnsFor(509), 1);  // 300 + 10 + 200 = 510 px side by side
    QVERIFY(reflow->heightForWidth(509) >= reflow->heightForWidth(700) + 10 + 40);
    reflow->setGeometry(QRect(0, 0, 509, reflow->heightForWidth(509)));
    QCOMPARE(first->geometry().top(), 0);
    QCOMPARE(growing->geometry().top(), first->geometry().bottom() + 1 + 10);
    QCOMPARE(growing->geometry().width(), 509);
  }

  // Parts that do not fit in one row take the fewest rows, evened out: four sit two by two
  // where three would fit, not three above one.
  void aReflowLayoutEvensOutItsRows() {
    QWidget page;
    auto* reflow = new ReflowLayout(4, &page);
    reflow->setContentsMargins(0, 0, 0, 0);
    reflow->setSpacing(0);
    for (int i = 0; i < 4; ++i) {
      auto* part = new QPushButton(QString::number(i));
      part->setMinimumSize(100, 40);
      reflow->addWidget(part);
    }
    QCOMPARE(reflow->columnsFor(400), 4);
    QCOMPARE(reflow->columnsFor(399), 2);  // three would fit
    QCOMPARE(reflow->columnsFor(199), 1);
    reflow->addWidget(new QPushButton("five"));
    QCOMPARE(reflow->columnsFor(400), 3);  // five in two rows: three and two, not four and one
    // Evened out only where the regrouped columns fit: wide, narrow, narrow, wide fit three a
    // row in 102 px, but two by two would need 200.
    QWidget other;
    auto* mixed = new ReflowLayout(4, &other);
    mixed->setContentsMargins(0, 0, 0, 0);
    mixed->setSpacing(0);
    for (const int least : {100, 1, 1, 100}) {
      auto* part = new QWidget;
      part->setMinimumWidth(least);
      mixed->addWidget(part);
    }
    QCOMPARE(mixed->columnsFor(202), 4);
    QCOMPARE(mixed->columnsFor(150), 3);
    mixed->setColumnGap(10);  // between columns only: 100 + 1 + 1 + 100 and three gaps
    QCOMPARE(mixed->columnsFor(232), 4);
    QCOMPARE(mixed->columnsFor(231), 2);  // two by two in 200 and a gap
    QCOMPARE(mixed->columnsFor(209), 3);
  }

  // A column of stretch 0 holds its parts at their preferred width, and they go beside the
  // others only where that width fits; stacked, they may be narrower.
  void aReflowLayoutKeepsAStretchZeroColumnAtItsPreferredWidth() {
    QWidget page;
    auto* reflow = new ReflowLayout(2, &page);
    reflow->setContentsMargins(0, 0, 0, 0);
    reflow->setSpacing(0);
    QLabel table("a table as wide as its columns");
    table.setMinimumWidth(50);
    table.setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Fixed);
    const int preferred = table.sizeHint().width();
    QVERIFY(preferred > 100);
    QPushButton plot("plot");
    plot.setMinimumWidth(100);
    reflow->addWidget(&table);
    reflow->addWidget(&plot);
    reflow->setColumnStretch(0, 0);
    QCOMPARE(reflow->columnsFor(preferred + 100), 2);
    QCOMPARE(reflow->columnsFor(preferred + 99), 1);  // 50 + 100 would fit, the table squeezed
    QCOMPARE(reflow->minimumSize().width(), 100);
    reflow->setGeometry(QRect(0, 0, preferred + 300, reflow->heightForWidth(preferred + 300)));
    QCOMPARE(table.width(), preferred);
    QCOMPARE(plot.x(), preferred);
    // Stacked with height to spare, the part that grows down takes it all.
    plot.setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Expanding);
    reflow->setGeometry(QRect(0, 0, preferred + 99, 400));
    QCOMPARE(table.height(), table.sizeHint().height());
    QCOMPARE(plot.geometry().bottom(), 399);
    delete reflow->takeAt(1);  // the parts on the stack go first, then the page
    delete reflow->takeAt(0);
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
