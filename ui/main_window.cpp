#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QResizeEvent>
#include <QScreen>
#include <QSettings>
#include <QSlider>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include "attention_panel.h"
#include "attribution_panel.h"
#include "bundled_models.h"
#include "compare_panel.h"
#include "digit_canvas.h"
#include "image/digit_preparation.h"
#include "image/image_file.h"
#include "model_slot.h"
#include "offset_panel.h"
#include "robustness_panel.h"
#include "scrolling_page.h"
#include "test_digit_source.h"
#include "training_panel.h"
#include "util/device.h"
#include "view_export.h"

namespace translution::ui {
namespace {
// Patch sizes that tile the 84x84 canvas exactly (7 and 12 are the papers' ViT-A/7 and /12).
const int kPatchSizes[] = {4, 6, 7, 12, 14, 21, 28};
// MNIST's digits fill 20 px on their longer side; ink half as large again is far outside what the models saw.
constexpr int kLargeInk = 30;
}  // namespace

MainWindow::MainWindow(const EngineOptions& engine, const QString& data_dir, QWidget* parent)
    : QMainWindow(parent) {
  setWindowTitle(tr("Translution Studio"));
  buildPanels(engine, data_dir);
  connectPanels();
  buildToolBar();
  buildMenus();
  buildStatusBar();
  connectDigits();
  restoreSettings();
  updateCanvasStatus();
  loadDefaultSlots();
  compare_->setCanvas(canvas_->pixels());
  attribution_->setCanvas(canvas_->pixels());
  digits_->load();
}

MainWindow::~MainWindow() = default;

// The canvas pane beside the tabs; every panel shares the comparison's slots.
void MainWindow::buildPanels(const EngineOptions& engine, const QString& data_dir) {
  canvas_ = new DigitCanvas(kStudioCanvas, this);
  digits_ = new TestDigitSource(data_dir, this);
  compare_ = new ComparePanel(engine, this);
  const int slot_count = std::clamp(QSettings().value("compare/slotCount", 2).toInt(),
                                    int(ComparePanel::kMinSlots), int(ComparePanel::kMaxSlots));
  for (int i = 0; i < slot_count; ++i) compare_->addSlot();
  attention_ = new AttentionPanel(compare_->slots(), this);
  offsets_ = new OffsetPanel(compare_->slots(), this);
  training_ = new TrainingPanel(engine, data_dir, compare_->slots(), this);
  robustness_ = new RobustnessPanel(engine, data_dir, compare_->slots(), canvas_, digits_, this);
  attribution_ = new AttributionPanel(compare_->slots(), canvas_, this);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(scrolling_page(compare_, this), tr("Compare"));  // two by two, it scrolls down
  tabs_->addTab(attention_, tr("Attention"));
  // One map per layer: deep models scroll within the tab.
  tabs_->addTab(scrolling_page(offsets_, this), tr("Offset weights"));
  // The form and both plots scroll on a screen too small for them (1024 x 600).
  tabs_->addTab(training_, tr("Training"));  // it scrolls its own page, keeping Start in view
  tabs_->addTab(robustness_, tr("Robustness"));
  tabs_->addTab(attribution_, tr("Attribution"));
  splitter_ = new QSplitter(this);
  splitter_->setObjectName("mainSplitter");
  splitter_->setChildrenCollapsible(false);
  splitter_->addWidget(buildCanvasPane());
  splitter_->addWidget(tabs_);
  splitter_->setStretchFactor(0, 2);
  splitter_->setStretchFactor(1, 3);
  setCentralWidget(splitter_);
}

void MainWindow::connectPanels() {
  connect(compare_, &ComparePanel::slotsChanged, this, [this] {
    attention_->setSlots(compare_->slots());
    offsets_->setSlots(compare_->slots());
    training_->setSlots(compare_->slots());
    robustness_->setSlots(compare_->slots());
    attribution_->setSlots(compare_->slots());
    updateSlotActions();
    QTimer::singleShot(0, this, &MainWindow::fitWindowToScreen);
  });
  connect(canvas_, &DigitCanvas::patchClicked, this,
          [this](int row, int col) { attention_->setQueryPatch(row, col, canvas_->patchSize()); });
  connect(attention_, &AttentionPanel::queryChanged, this, [this](const AttentionQuery& q) {
    if (q.cls)
      canvas_->setHighlightedPatch(-1, -1);
    else
      canvas_->setHighlightedPatch(int(q.y) / canvas_->patchSize(), int(q.x) / canvas_->patchSize());
  });
  connect(canvas_, &DigitCanvas::canvasChanged, compare_, &ComparePanel::setCanvas);
  connect(canvas_, &DigitCanvas::canvasChanged, attribution_, &AttributionPanel::setCanvas);
  connect(canvas_, &DigitCanvas::canvasChanged, this, [this] {
    updateCanvasStatus();
    updateScaleWarning();
  });
}

// The studio opens on a digit, not an empty square, as soon as the test digits are read.
void MainWindow::connectDigits() {
  connect(digits_, &TestDigitSource::loaded, this, [this] {
    random_action_->setEnabled(true);
    data_status_->setText(tr("%1 MNIST test digits").arg(digits_->size()));
    if (canvas_->isEmpty()) showTestDigit(CanvasKind::Static, 0);  // test digit 0 (a 7), centred
  });
  connect(digits_, &TestDigitSource::failed, this, [this](const QString& message) {
    random_action_->setToolTip(tr("No MNIST data: run `translution data fetch`.\n%1").arg(message));
    data_status_->setText(tr("MNIST not available"));
    data_status_->setToolTip(message);
  });
}

void MainWindow::buildStatusBar() {
  canvas_status_ = new QLabel(this);
  canvas_status_->setObjectName("canvasStatus");
  canvas_status_->setMinimumWidth(60);  // a long status elides rather than widening the window
  data_status_ = new QLabel(tr("Loading MNIST test digits…"), this);
  statusBar()->addWidget(canvas_status_, 1);
  statusBar()->addPermanentWidget(data_status_);
  auto* system_status = new QLabel(this);
  system_status->setToolTip(
      cuda_available() ? tr("Where models run (each slot's box picks CPU or CUDA), and this process's memory")
                       : tr("Where models run, and this process's memory. CUDA is not available: this "
                            "LibTorch has no CUDA, or there is no GPU."));
  statusBar()->addPermanentWidget(system_status);
  auto show_system = [system_status] {
    const int64_t rss = resident_memory_bytes();
    system_status->setText(tr("%1 · %2 MB")
                               .arg(cuda_available() ? tr("CPU + CUDA") : tr("CPU"))
                               .arg(rss > 0 ? QString::number(rss / 1000000) : tr("?")));
  };
  show_system();
  auto* timer = new QTimer(this);
  connect(timer, &QTimer::timeout, this, show_system);
  timer->start(2000);
}

// The canvas with, beneath it, a warning that appears when the ink is far larger
// than the digits the models learnt, and offers to fit it. Its room is kept while
// it is hidden, so the canvas never moves under the pen when it appears.
QWidget* MainWindow::buildCanvasPane() {
  auto* pane = new QWidget(this);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(canvas_, 1);
  scale_warning_ = new QFrame(pane);
  scale_warning_->setObjectName("scaleWarning");
  scale_warning_->setStyleSheet(
      "#scaleWarning { background: #fff4d6; border: 1px solid #e0b040; border-radius: 4px; }"
      "#scaleWarning QLabel { color: #3a2a00; }");
  scale_text_ = new QLabel(scale_warning_);
  scale_text_->setWordWrap(true);
  auto* fit = new QPushButton(tr("Fit to MNIST size"), scale_warning_);
  fit->setObjectName("fitToMnist");
  fit->setToolTip(
      tr("Scale the ink to 20 px on its longer side and centre it by mass, as MNIST's digits were "
         "prepared (and as translution predict prepares an image)"));
  connect(fit, &QPushButton::clicked, this, &MainWindow::fitToMnist);
  auto* row = new QHBoxLayout(scale_warning_);
  row->addWidget(scale_text_, 1);
  row->addWidget(fit);
  // Three lines of text at most: the height never depends on what the warning says.
  scale_warning_->setFixedHeight(3 * fontMetrics().lineSpacing() + 16);
  QSizePolicy keep_room = scale_warning_->sizePolicy();
  keep_room.setRetainSizeWhenHidden(true);
  scale_warning_->setSizePolicy(keep_room);
  scale_warning_->hide();
  layout->addWidget(scale_warning_);
  return pane;
}

void MainWindow::updateScaleWarning() {
  const QRect ink = canvas_->inkBox();
  const bool large = !ink.isEmpty() && std::max(ink.width(), ink.height()) > kLargeInk;
  if (large)
    scale_text_->setText(
        tr("This digit is %1 x %2 px; MNIST's are 20 px on their longer side (the dashed box). "
           "At this size the models may well misread it.")
            .arg(ink.width())
            .arg(ink.height()));
  scale_warning_->setVisible(large);
}

bool MainWindow::scaleWarningVisible() const { return !scale_warning_->isHidden(); }

bool MainWindow::fitToMnist() {
  if (canvas_->isEmpty()) return false;
  const int64_t size = canvas_->canvasSize();
  const Placement centre{(size - 28) / 2, (size - 28) / 2};
  CanvasOrigin origin = canvas_->origin();  // the same digit, rescaled
  canvas_->setPixels(compose_canvas(prepare_digit(canvas_->pixels()), size, centre), origin);
  return true;
}

bool MainWindow::busy() const {
  return compare_->busy() || robustness_->busy() || offsets_->busy() || attribution_->busy();
}

// Each slot gets the checkpoint it had last time, else a bundled model: a
// Translution-family model in A, self-attention in B, LoR in C and the centred-trained
// LoR in D (the one-click demo puts the centred-trained Translution and self-attention
// in A and B, so four slots then hold four different models).
void MainWindow::loadDefaultSlots() {
  QSettings settings;
  const QString translution = bundled_model("translution");
  const QString defaults[] = {translution.isEmpty() ? bundled_model("lor") : translution,
                              bundled_model("attention"), bundled_model("lor"), bundled_model("lor-static")};
  for (int i = 0; i < compare_->slots().size(); ++i) {
    ModelSlot* slot = compare_->slots()[i];
    QString source = settings.value("compare/slot" + slot->name()).toString();
    if (source.isEmpty() || !QFile::exists(source)) source = defaults[i];
    if (!source.isEmpty())
      slot->load(source, settings.value("compare/device" + slot->name(), "cpu").toString());
  }
}

void MainWindow::buildToolBar() {
  canvas_bar_ = addToolBar(tr("Canvas"));
  canvas_bar_->setObjectName("canvasToolBar");
  canvas_bar_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  addToolActions(canvas_bar_);
  addBrushAndGrid(canvas_bar_);
  addEditActions(canvas_bar_);
  digits_bar_ = addToolBar(tr("Digits"));
  digits_bar_->setObjectName("digitsToolBar");
  digits_bar_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  addDigitSources(digits_bar_);
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  wrapToolBars();
}

// The digits' tool bar beside the canvas's where the window is wide enough, beneath it where
// it is not: a tool bar too short for its tools hides the last behind an overflow button,
// where a small screen's user would not find "Random test digit". Tool bars the user has
// moved apart are left where they are.
void MainWindow::wrapToolBars() {
  if (!canvas_bar_ || toolBarArea(canvas_bar_) != toolBarArea(digits_bar_)) return;
  const bool wrap = canvas_bar_->sizeHint().width() + digits_bar_->sizeHint().width() > width();
  if (wrap == toolBarBreak(digits_bar_)) return;
  if (wrap)
    insertToolBarBreak(digits_bar_);
  else
    removeToolBarBreak(digits_bar_);
}

// Draw, erase, move and query: one checked at a time.
void MainWindow::addToolActions(QToolBar* bar) {
  auto* tools = new QActionGroup(this);
  const struct {
    const char* name;
    const char* shortcut;
    DigitCanvas::Tool tool;
    const char* tip;
  } tool_specs[] = {
      {"Draw", "D", DigitCanvas::Tool::Draw, "Draw with the mouse (right button erases)"},
      {"Erase", "E", DigitCanvas::Tool::Erase, "Erase with the mouse"},
      {"Move", "M", DigitCanvas::Tool::Move, "Drag the digit around the canvas (arrow keys nudge by 1 px)"},
      {"Query", "Q", DigitCanvas::Tool::Query, "Click a patch to see what it attends to (Attention tab)"},
  };
  for (const auto& spec : tool_specs) {
    QAction* action = bar->addAction(tr(spec.name));
    action->setCheckable(true);
    action->setShortcut(QKeySequence(spec.shortcut));
    action->setToolTip(tr("%1 (%2)").arg(tr(spec.tip), spec.shortcut));
    action->setChecked(spec.tool == DigitCanvas::Tool::Draw);
    tools->addAction(action);
    const DigitCanvas::Tool tool = spec.tool;
    connect(action, &QAction::triggered, canvas_, [this, tool] { canvas_->setTool(tool); });
  }
  bar->addSeparator();
}

// The brush radius, the patch size and the grid over the canvas.
void MainWindow::addBrushAndGrid(QToolBar* bar) {
  bar->addWidget(new QLabel(tr(" Brush "), this));
  brush_slider_ = new QSlider(Qt::Horizontal, this);
  brush_slider_->setRange(1, 12);  // half-pixels: radius 0.5 .. 6
  brush_slider_->setValue(4);
  brush_slider_->setMinimumWidth(60);  // a crowded tool bar moves tools to its overflow menu instead
  brush_slider_->setMaximumWidth(110);
  brush_slider_->setToolTip(tr("Brush radius in canvas pixels"));
  connect(brush_slider_, &QSlider::valueChanged, this, [this](int v) { canvas_->setBrushRadius(v / 2.0); });
  bar->addWidget(brush_slider_);
  bar->addWidget(new QLabel(tr("  Patch "), this));
  patch_box_ = new QComboBox(this);
  for (int p : kPatchSizes) patch_box_->addItem(QString("%1 px (%2x%2)").arg(p).arg(84 / p), p);
  patch_box_->setCurrentIndex(patch_box_->findData(12));
  patch_box_->setToolTip(tr("ViT patch size (and tokens per side): the grid drawn over the canvas"));
  connect(patch_box_, &QComboBox::currentIndexChanged, this,
          [this] { canvas_->setPatchSize(patch_box_->currentData().toInt()); });
  bar->addWidget(patch_box_);
  QAction* grid = bar->addAction(tr("Grid"));
  grid->setCheckable(true);
  grid->setChecked(true);
  grid->setShortcut(QKeySequence("G"));
  grid->setToolTip(tr("Show the patch grid (G)"));
  connect(grid, &QAction::toggled, canvas_, &DigitCanvas::setGridVisible);
  bar->addSeparator();
}

void MainWindow::addEditActions(QToolBar* bar) {
  QAction* undo = bar->addAction(tr("Undo"));
  undo->setShortcut(QKeySequence::Undo);
  undo->setEnabled(false);
  undo->setToolTip(tr("Undo the last stroke, move or clear (Ctrl+Z)"));
  connect(undo, &QAction::triggered, canvas_, &DigitCanvas::undo);
  connect(canvas_, &DigitCanvas::undoAvailable, undo, &QAction::setEnabled);
  QAction* clear = bar->addAction(tr("Clear"));
  clear->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
  clear->setToolTip(tr("Clear the canvas (Delete)"));
  connect(clear, &QAction::triggered, canvas_, &DigitCanvas::clear);
}

// Where a digit comes from: a picture, or a random MNIST test digit.
void MainWindow::addDigitSources(QToolBar* bar) {
  open_image_ = bar->addAction(tr("Open image…"));
  open_image_->setShortcut(QKeySequence::Open);
  open_image_->setToolTip(
      tr("Put a PNG or JPEG of a handwritten digit on the canvas, prepared as MNIST was (Ctrl+O)"));
  connect(open_image_, &QAction::triggered, this, &MainWindow::chooseImage);
  random_action_ = bar->addAction(tr("Random test digit"));
  random_action_->setShortcut(QKeySequence("R"));
  random_action_->setToolTip(tr("Place a random MNIST test digit on the canvas (R)"));
  random_action_->setEnabled(false);
  connect(random_action_, &QAction::triggered, this, &MainWindow::showRandomDigit);
  placement_box_ = new QComboBox(this);
  placement_box_->addItem(tr("centred"), int(CanvasKind::Static));
  placement_box_->addItem(tr("anywhere"), int(CanvasKind::Dynamic));
  placement_box_->setToolTip(
      tr("Where a random test digit is placed: centred as in static MNIST, or anywhere on "
         "the canvas as in dynamic MNIST"));
  bar->addWidget(placement_box_);
}

void MainWindow::chooseImage() {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a picture of a digit"),
                                                    settings.value("canvas/imageDir").toString(),
                                                    tr("Images (*.png *.jpg *.jpeg);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue("canvas/imageDir", QFileInfo(path).absolutePath());
  const QString error = openImage(path);
  if (!error.isEmpty()) QMessageBox::warning(this, tr("Cannot use this image"), error);
}

QString MainWindow::openImage(const QString& path) {
  try {
    const int64_t size = canvas_->canvasSize();
    const Placement centre{(size - 28) / 2, (size - 28) / 2};
    canvas_->setPixels(compose_canvas(prepare_digit(read_image_gray(path.toStdString())), size, centre),
                       CanvasOrigin{-1, QFileInfo(path).fileName()});
    return {};
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

void MainWindow::showRandomDigit() {
  if (!digits_->ready()) return;
  const auto kind = CanvasKind(placement_box_->currentData().toInt());
  showTestDigit(kind, digits_->random(kind).index);
}

bool MainWindow::showTestDigit(CanvasKind kind, int64_t index) {
  if (!digits_->ready() || index < 0 || index >= digits_->size()) return false;
  const auto s = digits_->sample(kind, index);
  const QString description = tr("test #%1 (label %2, %3)")
                                  .arg(s.index)
                                  .arg(s.label)
                                  .arg(QString::fromStdString(canvas_kind_name(kind)));
  canvas_->setPixels(s.pixels, CanvasOrigin{int(s.label), description});
  return true;
}

QString MainWindow::canvasStatus() const { return canvas_status_->text(); }

// The status follows the canvas: its origin travels with undo and moves, and a stroke clears it.
void MainWindow::updateCanvasStatus() {
  const QPointF c = canvas_->massCentre();
  QString text = c.x() < 0 ? tr("Empty canvas: draw a digit or press R")
                           : tr("Ink centre at (%1, %2)").arg(c.x(), 0, 'f', 1).arg(c.y(), 0, 'f', 1);
  const QString origin = canvas_->origin().description;
  if (c.x() >= 0) text += "  ·  " + (origin.isEmpty() ? tr("your drawing") : origin);
  canvas_status_->setText(text);
  canvas_status_->setToolTip(text);
}

void MainWindow::restoreSettings() {
  QSettings settings;
  if (!restoreGeometry(settings.value("window/geometry").toByteArray())) {
    // First start: most of the screen, centred.
    if (const QScreen* screen = QGuiApplication::primaryScreen()) {
      const QRect available = screen->availableGeometry();
      resize(available.size() * 0.85);
      move(available.center() - rect().center());
    }
  }
  restoreState(settings.value("window/state").toByteArray());
  if (!splitter_->restoreState(settings.value("window/splitter").toByteArray()))
    splitter_->setSizes({width() * 2 / 7, width() * 5 / 7});  // first start: a canvas large enough to draw on
  tabs_->setCurrentIndex(settings.value("window/tab", 0).toInt());
  const int patch_index = patch_box_->findData(settings.value("canvas/patch", 12).toInt());
  if (patch_index >= 0) patch_box_->setCurrentIndex(patch_index);
  brush_slider_->setValue(settings.value("canvas/brush", 4).toInt());
  placement_box_->setCurrentIndex(settings.value("canvas/placement", 1).toInt() == 0 ? 0 : 1);
  canvas_->setPatchSize(patch_box_->currentData().toInt());
  canvas_->setBrushRadius(brush_slider_->value() / 2.0);
  fitWindowToScreen();
}

// A window larger than its screen (a remembered geometry from a larger monitor, or
// slots added) is brought back inside the screen's available area.
void MainWindow::fitWindowToScreen() {
  // The offscreen platform's one screen is a fixed stand-in: windows there are sized by their caller.
  if (QGuiApplication::platformName() == "offscreen") return;
  const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
  if (!screen || isMaximized() || isFullScreen()) return;
  const QSize available = screen->availableGeometry().size();
  const QSize frame = frameGeometry().size() - geometry().size();
  const QSize fitted = size().boundedTo(available - frame).expandedTo(minimumSizeHint());
  if (fitted != size()) resize(fitted);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (training_->hasUnsavedRun() && !qEnvironmentVariableIsSet("TRANSLUTION_NO_DIALOGS")) {
    const auto answer =
        QMessageBox::question(this, tr("Discard the training run?"),
                              tr("The latest training run has not been saved. Close anyway and lose it?"),
                              QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Discard) {
      event->ignore();
      return;
    }
  }
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  settings.setValue("window/splitter", splitter_->saveState());
  settings.setValue("window/tab", tabs_->currentIndex());
  settings.setValue("canvas/patch", patch_box_->currentData().toInt());
  settings.setValue("canvas/brush", brush_slider_->value());
  settings.setValue("canvas/placement", placement_box_->currentIndex());
  for (const ModelSlot* slot : compare_->slots()) {
    settings.setValue("compare/slot" + slot->name(), slot->source());
    settings.setValue("compare/device" + slot->name(), slot->device());
  }
  event->accept();
}

}  // namespace translution::ui
