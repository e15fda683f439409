// translution-studio: the desktop app. This file only parses arguments and wires
// the window together; `--screenshot` renders offscreen for tests and docs.
#include <cstdio>
#include <optional>

#include <QApplication>
#include <QCheckBox>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include "attribution_panel.h"
#include "bundled_models.h"
#include "compare_panel.h"
#include "cpu/allocator.h"
#include "cpu/blas_kernels.h"
#include "cpu/helper_threads.h"
#include "data/canvas_dataset.h"
#include "data/mnist_provision.h"
#include "digit_canvas.h"
#include "knockout_bar.h"
#include "layout_audit.h"
#include "main_window.h"
#include "model_slot.h"
#include "offset_panel.h"
#include "protocol_box.h"
#include "robustness_panel.h"
#include "studio_style.h"
#include "test_digit_source.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "view_export.h"

namespace {

bool has_argument(int argc, char** argv, const char* prefix) {
  for (int i = 1; i < argc; ++i)
    if (QByteArray(argv[i]).startsWith(prefix)) return true;
  return false;
}

void wait_for_digits(translution::ui::TestDigitSource* digits) {
  if (digits->ready() || !digits->error().isEmpty()) return;
  QEventLoop loop;
  QObject::connect(digits, &translution::ui::TestDigitSource::loaded, &loop, &QEventLoop::quit);
  QObject::connect(digits, &translution::ui::TestDigitSource::failed, &loop, &QEventLoop::quit);
  QTimer::singleShot(60000, &loop, &QEventLoop::quit);
  loop.exec();
}

// Lets queued work (model loading, predictions) finish before a screenshot.
void wait_until_idle(const translution::ui::MainWindow& window) {
  QElapsedTimer timer;
  timer.start();
  do {
    QApplication::processEvents(QEventLoop::AllEvents, 50);
    QThread::msleep(10);
  } while (window.busy() &&
           timer.elapsed() < 900000);  // a robustness sweep on a busy 2-core machine takes minutes
  QApplication::processEvents();
}

int take_screenshot(translution::ui::MainWindow& window, const QString& panel, const QString& path) {
  QWidget* target = nullptr;
  if (panel == "window") target = &window;
  if (panel == "canvas") target = window.canvas();
  const QStringList tabs = {"compare", "attention", "offsets", "training", "robustness", "attribution"};
  const bool on_robustness =
      panel == "robustness" || panel == "sweep" || panel == "experiment" || panel == "shift";
  if (tabs.contains(panel) || on_robustness) {
    window.tabs()->setCurrentIndex(on_robustness ? int(tabs.indexOf("robustness"))
                                                 : int(tabs.indexOf(panel)));
    target = &window;
  }
  // Knockout: slot A with every offset beyond 2 patches knocked out, on the Offset weights tab, by the
  // button a user would click.
  if (panel == "knockout") {
    window.tabs()->setCurrentIndex(int(tabs.indexOf("offsets")));
    target = &window;
    wait_until_idle(window);
    translution::ui::KnockoutBar* bar = window.offsets()->knockoutBar();
    bar->selectBeyond(2);
    bar->findChild<QPushButton*>("knockoutApply")->click();
  }
  if (panel == "attribution")  // the map on the canvas too, as the tab's checkbox puts it
    window.attribution()->findChild<QCheckBox*>("attributionOverlay")->setChecked(true);
  // The one-click demo, by its button: the centred-trained pair, slid and evaluated.
  if (panel == "robustness" || panel == "sweep" || panel == "shift") {
    wait_until_idle(window);
    window.robustness()->findChild<QPushButton*>("centredPairDemo")->click();
  }
  if (panel == "sweep") {  // then the slots' translation sweeps at the panel's defaults
    wait_until_idle(window);
    QElapsedTimer sweep;
    sweep.start();
    const QObject pass_watch;  // ends the connection below with this scope
    QObject::connect(window.robustness(), &translution::ui::RobustnessPanel::sweepPassShown, &pass_watch,
                     [&sweep](int pass, int passes) {
                       if (pass + 1 < passes)
                         std::printf("coarse maps of the slots: %.1f s\n", sweep.elapsed() / 1000.0);
                     });
    window.robustness()->runSweep();
    wait_until_idle(window);
    std::printf("sweep of the slots: %.1f s\n", sweep.elapsed() / 1000.0);
  }
  if (panel == "shift") {  // then the slots' shift metrics at the panel's defaults
    wait_until_idle(window);
    QElapsedTimer shift;
    shift.start();
    window.robustness()->measureShiftMetrics();
    wait_until_idle(window);
    std::printf("shift metrics of the slots: %.1f s\n", shift.elapsed() / 1000.0);
  }
  if (panel == "experiment") {  // the protocol experiment at its default budget, trained here
    wait_until_idle(window);
    QElapsedTimer experiment;
    experiment.start();
    window.robustness()->protocol()->runExperiment();
    wait_until_idle(window);
    std::printf("experiment at the default budget: %.1f s\n", experiment.elapsed() / 1000.0);
  }
  if (!target) {
    std::fprintf(stderr,
                 "error: unknown panel '%s' (panels: window, canvas, compare, attention, offsets, knockout, "
                 "training, robustness, attribution, sweep, shift, experiment)\n",
                 qPrintable(panel));
    return 2;
  }
  wait_until_idle(window);
  if (panel == "sweep" || panel == "shift") {
    // Pictures of the results: the lower pane gets the height, and the path above, which a
    // third of it would cut off mid-plot, folds away (a user drags it back).
    auto* splitter = window.robustness()->findChild<QSplitter*>("robustnessSplitter");
    splitter->setCollapsible(0, true);
    splitter->setSizes({0, splitter->height()});
    wait_until_idle(window);
  }
  if (panel == "robustness" || panel == "sweep")  // what the demo put on screen, for scripts that check it
    for (const translution::ui::ModelSlot* slot : window.compare()->slots())
      std::printf("slot %s: %s\n", qPrintable(slot->name()), qPrintable(slot->source()));
  const QString error = translution::ui::save_widget_picture(target, path);
  if (!error.isEmpty()) {
    std::fprintf(stderr, "error: %s\n", qPrintable(error));
    return 1;
  }
  std::printf("wrote %s (%s, %dx%d)\n", qPrintable(path), qPrintable(panel), target->width(),
              target->height());
  return 0;
}

// Slots added or removed until there are `count`, then idle; an added slot holds the bundled
// model the studio gives that slot on a first start (LoR in C, the centred-trained Translution in D).
void set_slot_count(translution::ui::MainWindow& window, int count) {
  translution::ui::ComparePanel* compare = window.compare();
  const char* defaults[] = {"translution", "attention", "lor", "lor-static"};  // as MainWindow's
  while (compare->slots().size() < count) {
    translution::ui::ModelSlot* slot = compare->addSlot();
    if (!slot) break;
    const QString source = translution::ui::bundled_model(defaults[compare->slots().indexOf(slot) % 4]);
    if (!source.isEmpty()) slot->load(source);
  }
  while (compare->slots().size() > count && compare->removeSlot(compare->slots().last())) {
  }
  wait_until_idle(window);
}

// "1280x800" in device pixels, as the screen reports it; an empty size on a malformed text.
QSize parse_size(const QString& text) {
  const QStringList parts = text.toLower().split('x');
  bool ok_w = false, ok_h = false;
  const int w = parts.size() == 2 ? parts[0].toInt(&ok_w) : 0,
            h = parts.size() == 2 ? parts[1].toInt(&ok_h) : 0;
  return ok_w && ok_h && w >= 200 && h >= 200 && w <= 16384 && h <= 16384 ? QSize(w, h) : QSize();
}

// --check-layout: the window with `slots` slots laid out on a screen of `screen`
// device pixels (QT_SCALE_FACTOR divides it into logical pixels), every tab audited.
int check_layout(translution::ui::MainWindow& window, const QSize& screen, int slots) {
  set_slot_count(window, slots);
  const translution::ui::ComparePanel* compare = window.compare();
  const double ratio = qApp->devicePixelRatio();
  const QSize available(int(screen.width() / ratio), int(screen.height() / ratio));
  const translution::ui::LayoutAuditResult result =
      translution::ui::audit_layout(&window, window.tabs(), available);
  for (const translution::ui::LayoutOffender& o : result.offenders)
    std::printf("offender: %s\n", qPrintable(translution::ui::describe(o)));
  std::printf(
      "audited %d widgets on %d tabs: %d offenders (screen %dx%d at scale %.3g: %dx%d logical, %d slots)\n",
      result.widgets, result.tabs, int(result.offenders.size()), screen.width(), screen.height(), ratio,
      available.width(), available.height(), int(compare->slots().size()));
  return result.offenders.isEmpty() ? 0 : 1;
}

// The studio's command line.
void add_options(QCommandLineParser& parser) {
  parser.setApplicationDescription(
      "Translution Studio: draw a digit and watch Translution and self-attention.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addOptions({
      {"data-dir", "MNIST directory (default: $TRANSLUTION_DATA or data/mnist).", "DIR"},
      {"screenshot", "Render offscreen to FILE (a PNG image) and exit.", "FILE"},
      {"panel",
       "Panel to screenshot: window (default), canvas, compare, attention, offsets, knockout (offsets, "
       "slot A with the offsets beyond 2 patches knocked out), training, robustness (after the one-click "
       "demo), sweep (the demo, then the slots' sweeps), shift (the demo, then the slots' shift metrics), "
       "attribution, or experiment (the protocol experiment at its default budget).",
       "NAME", "window"},
      {"checkpoint", "Load FILE into the next comparison slot (repeat for slot B).", "FILE"},
      {"dataset", "Start with a test digit placed as static or dynamic.", "KIND"},
      {"index", "Index of that test digit (default 0).", "I", "0"},
      {"check-layout",
       "Lay the window out offscreen on a screen of --size, walk every tab and widget, print each "
       "clipped, overlapping or squeezed widget, and exit 1 if there is any."},
      {"size",
       "The screen for --check-layout in device pixels (QT_SCALE_FACTOR divides it), or the window for "
       "--screenshot.",
       "WxH", "1280x800"},
      {"slots", "Comparison slots for --check-layout and --screenshot (2 to 4).", "N", "2"},
  });
}

// --dataset KIND --index I: that test digit on the canvas, once the digits are read; 0 where it is shown.
int show_test_digit(translution::ui::MainWindow& window, const QCommandLineParser& parser) {
  std::optional<translution::CanvasKind> kind;
  try {
    kind = translution::parse_canvas_kind(parser.value("dataset").toStdString());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  wait_for_digits(window.digits());
  if (!window.showTestDigit(*kind, parser.value("index").toLongLong())) {
    std::fprintf(stderr, "error: cannot show test digit %s: %s\n", qPrintable(parser.value("index")),
                 window.digits()->ready() ? "index out of range" : qPrintable(window.digits()->error()));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  translution::keep_freed_memory();
  // The model slots predict at the same time: every slot, training run and panel
  // computes under these options (one thread per model), handed down.
  translution::EngineOptions engine;
  try {
    engine = translution::start_process(translution::ProcessModels::SideBySide);
  } catch (const std::exception& e) {  // a bad TRANSLUTION_THREADS, before any window
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  if (const std::string hint = translution::avx2_blas_hint(); !hint.empty())
    std::fprintf(stderr, "note: %s\n", hint.c_str());
  // Decided before QApplication exists: screenshots and --help never need a display.
  const bool screenshot =
      has_argument(argc, argv, "--screenshot") || has_argument(argc, argv, "--check-layout");
  const bool headless =
      screenshot || ((has_argument(argc, argv, "--help") || has_argument(argc, argv, "--version") ||
                      has_argument(argc, argv, "-h")) &&
                     qEnvironmentVariableIsEmpty("DISPLAY"));
  if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setStyle(new translution::ui::StudioStyle);  // the application owns it
  QApplication::setOrganizationName("Translution");
  QApplication::setApplicationName("Translution Studio");
  QApplication::setApplicationVersion("0.1.0");

  QCommandLineParser parser;
  add_options(parser);
  parser.process(app);

  // Screenshots and audits must not depend on (or change) the user's remembered layout, nor each other's.
  QTemporaryDir private_settings;
  if (screenshot) {
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, private_settings.path());
  }

  const QString data_dir = parser.isSet("data-dir")
                               ? parser.value("data-dir")
                               : QString::fromStdString(translution::default_mnist_dir());
  translution::ui::MainWindow window(engine, data_dir);
  if (screenshot) {  // the documentation's pictures are 1280 x 800 unless --size asks otherwise
    const QSize size = parser.isSet("size") ? parse_size(parser.value("size")) : QSize(1280, 800);
    if (size.isEmpty()) {
      std::fprintf(stderr, "error: --size %s: want WxH between 200 and 16384 pixels\n",
                   qPrintable(parser.value("size")));
      return 2;
    }
    window.resize(size);
  }
  const QStringList checkpoints = parser.values("checkpoint");
  for (int i = 0; i < checkpoints.size() && i < window.compare()->slots().size(); ++i)
    window.compare()->slots()[i]->load(checkpoints[i]);
  window.show();

  if (parser.isSet("dataset"))
    if (const int failed = show_test_digit(window, parser)) return failed;
  if (parser.isSet("check-layout")) {
    const QSize size = parse_size(parser.value("size"));
    bool ok = false;
    const int slots = parser.value("slots").toInt(&ok);
    if (size.isEmpty() || !ok || slots < translution::ui::ComparePanel::kMinSlots ||
        slots > translution::ui::ComparePanel::kMaxSlots) {
      std::fprintf(stderr,
                   "error: --size %s --slots %s: want WxH between 200 and 16384 pixels, and 2 to 4 slots\n",
                   qPrintable(parser.value("size")), qPrintable(parser.value("slots")));
      return 2;
    }
    wait_for_digits(window.digits());
    return check_layout(window, size, slots);
  }
  if (screenshot) {
    wait_for_digits(window.digits());
    if (parser.isSet("slots")) set_slot_count(window, parser.value("slots").toInt());
    return take_screenshot(window, parser.value("panel"), parser.value("screenshot"));
  }
  return app.exec();
}
