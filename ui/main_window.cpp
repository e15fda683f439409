#include "main_window.h"

#include <QActionGroup>
#include <QCloseEvent>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QPushButton>
#include <QScreen>
#include <QVBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QStatusBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>

#include "attention_panel.h"
#include "bundled_models.h"
#include "compare_panel.h"
#include "digit_canvas.h"
#include "model_slot.h"
#include "offset_panel.h"
#include "robustness_panel.h"
#include "test_digit_source.h"
#include "training_panel.h"
#include "image/digit_preparation.h"
#include "image/image_file.h"
#include "util/device.h"

namespace translution::ui {
namespace {
// Patch sizes that tile the 84x84 canvas exactly (7 and 12 are the papers' ViT-A/7 and /12).
const int kPatchSizes[] = {4, 6, 7, 12, 14, 21, 28};
}  // namespace

MainWindow::MainWindow(const QString& data_dir, QWidget* parent)
    : QMainWindow(parent),
      canvas_(new DigitCanvas(84, this)),
      splitter_(new QSplitter(this)),
      tabs_(new QTabWidget(this)),
      compare_(new ComparePanel(this)),
      digits_(new TestDigitSource(data_dir, this)) {
  setWindowTitle(tr("Translution Studio"));
  splitter_->setObjectName("mainSplitter");
  splitter_->addWidget(buildCanvasPane());
  splitter_->addWidget(tabs_);
  splitter_->setStretchFactor(0, 2);
  splitter_->setStretchFactor(1, 3);
  setCentralWidget(splitter_);
  tabs_->addTab(compare_, tr("Compare"));
  const int slot_count = std::clamp(QSettings().value("compare/slotCount", 2).toInt(), int(ComparePanel::kMinSlots),
                                   int(ComparePanel::kMaxSlots));
  for (int i = 0; i < slot_count; ++i) compare_->addSlot();
  attention_ = new AttentionPanel(compare_->slots(), this);
  tabs_->addTab(attention_, tr("Attention"));
  offsets_ = new OffsetPanel(compare_->slots(), this);
  auto* offsets_scroll = new QScrollArea(this);
  offsets_scroll->setWidget(offsets_);
  offsets_scroll->setWidgetResizable(true);
  tabs_->addTab(offsets_scroll, tr("Offset weights"));
  training_ = new TrainingPanel(data_dir, compare_->slots(), this);
  tabs_->addTab(training_, tr("Training"));
  robustness_ = new RobustnessPanel(data_dir, compare_->slots(), canvas_, digits_, this);
  tabs_->addTab(robustness_, tr("Robustness"));
  connect(compare_, &ComparePanel::slotsChanged, this, [this] {
    attention_->setSlots(compare_->slots());
    offsets_->setSlots(compare_->slots());
    training_->setSlots(compare_->slots());
    robustness_->setSlots(compare_->slots());
  });
  // The true class is the test digit's label until the user draws, erases or opens an image.
  connect(canvas_, &DigitCanvas::inkEdited, this, [this] {
    last_sample_.clear();
    robustness_->setKnownLabel(-1);
  });
  connect(canvas_, &DigitCanvas::patchClicked, this,
          [this](int row, int col) { attention_->setQueryPatch(row, col, canvas_->patchSize()); });
  connect(attention_, &AttentionPanel::queryChanged, this, [this](const AttentionQuery& q) {
    if (q.cls) canvas_->setHighlightedPatch(-1, -1);
    else canvas_->setHighlightedPatch(int(q.y) / canvas_->patchSize(), int(q.x) / canvas_->patchSize());
  });
  connect(canvas_, &DigitCanvas::canvasChanged, compare_, &ComparePanel::setCanvas);
  buildToolBar();
  canvas_status_ = new QLabel(this);
  data_status_ = new QLabel(tr("Loading MNIST test digits…"), this);
  statusBar()->addWidget(canvas_status_, 1);
  statusBar()->addPermanentWidget(data_status_);
  auto* system_status = new QLabel(this);
  system_status->setToolTip(tr("Where models run, and this process's memory"));
  statusBar()->addPermanentWidget(system_status);
  auto show_system = [system_status] {
    const int64_t rss = resident_memory_bytes();
    system_status->setText(tr("%1 · %2 MB").arg(cuda_available() ? tr("CPU + CUDA") : tr("CPU"))
                               .arg(rss > 0 ? QString::number(rss / 1000000) : tr("?")));
  };
  show_system();
  auto* timer = new QTimer(this);
  connect(timer, &QTimer::timeout, this, show_system);
  timer->start(2000);
  connect(canvas_, &DigitCanvas::canvasChanged, this, [this] {
    updateCanvasStatus();
    updateScaleWarning();
  });
  connect(digits_, &TestDigitSource::loaded, this, [this] {
    random_action_->setEnabled(true);
    data_status_->setText(tr("%1 MNIST test digits").arg(digits_->size()));
    // The studio opens on a digit, not an empty square: test digit 0 (a 7), centred.
    if (canvas_->inkBox().isEmpty()) showTestDigit(CanvasKind::Static, 0);
  });
  connect(digits_, &TestDigitSource::failed, this, [this](const QString& message) {
    random_action_->setToolTip(tr("No MNIST data: run `translution data fetch`.\n%1").arg(message));
    data_status_->setText(tr("MNIST not available"));
    data_status_->setToolTip(message);
  });
  restoreSettings();
  updateCanvasStatus();
  loadDefaultSlots();
  compare_->setCanvas(canvas_->pixels());
  digits_->load();
}

// The canvas with, beneath it, a warning that appears when the ink is far larger
// than the digits the models learnt, and offers to fit it.
QWidget* MainWindow::buildCanvasPane() {
  auto* pane = new QWidget(this);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(canvas_, 1);
  scale_warning_ = new QFrame(pane);
  scale_warning_->setObjectName("scaleWarning");
  scale_warning_->setStyleSheet("#scaleWarning { background: #fff4d6; border: 1px solid #e0b040; border-radius: 4px; }");
  scale_text_ = new QLabel(scale_warning_);
  scale_text_->setWordWrap(true);
  auto* fit = new QPushButton(tr("Fit to MNIST size"), scale_warning_);
  fit->setObjectName("fitToMnist");
  fit->setToolTip(tr("Scale the ink to 20 px on its longer side and centre it by mass, as MNIST's digits were "
                     "prepared (and as translution predict prepares an image)"));
  connect(fit, &QPushButton::clicked, this, &MainWindow::fitToMnist);
  auto* row = new QHBoxLayout(scale_warning_);
  row->addWidget(scale_text_, 1);
  row->addWidget(fit);
  scale_warning_->hide();
  layout->addWidget(scale_warning_);
  return pane;
}

// MNIST's digits fill 20 px on their longer side; ink half as large again is far outside what the models saw.
void MainWindow::updateScaleWarning() {
  const QRect ink = canvas_->inkBox();
  const int longer = std::max(ink.width(), ink.height());
  const bool large = !ink.isEmpty() && longer > 30;
  if (large)
    scale_text_->setText(tr("This digit is %1 x %2 px. The models learnt MNIST's digits, 20 px on their longer side "
                            "(the dashed box): at this size they may well misread it.")
                             .arg(ink.width())
                             .arg(ink.height()));
  scale_warning_->setVisible(large);
}

bool MainWindow::scaleWarningVisible() const { return !scale_warning_->isHidden(); }

bool MainWindow::fitToMnist() {
  if (canvas_->inkBox().isEmpty()) return false;
  const int64_t size = canvas_->canvasSize();
  const Placement centre{(size - 28) / 2, (size - 28) / 2};
  canvas_->setPixels(compose_canvas(prepare_digit(canvas_->pixels()), size, centre));
  return true;
}

bool MainWindow::busy() const { return compare_->busy() || robustness_->busy() || offsets_->busy(); }

// Each slot gets the checkpoint it had last time, else a bundled model
// (Translution in A, self-attention in B).
void MainWindow::loadDefaultSlots() {
  QSettings settings;
  // Slot A: a Translution-family model (the full one when bundled); slot B: self-attention;
  // C and D: LoR and Translution trained on centred digits.
  const QString translution = bundled_model("translution");
  const QString defaults[] = {translution.isEmpty() ? bundled_model("lor") : translution, bundled_model("attention"),
                              bundled_model("lor"), bundled_model("translution-static")};
  for (int i = 0; i < compare_->slots().size(); ++i) {
    ModelSlot* slot = compare_->slots()[i];
    QString source = settings.value("compare/slot" + slot->name()).toString();
    if (source.isEmpty() || !QFile::exists(source)) source = defaults[i];
    if (!source.isEmpty()) slot->load(source, settings.value("compare/device" + slot->name(), "cpu").toString());
  }
}

MainWindow::~MainWindow() = default;

void MainWindow::buildToolBar() {
  QToolBar* bar = addToolBar(tr("Canvas"));
  bar->setObjectName("canvasToolBar");
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  addToolActions(bar);
  addBrushAndGrid(bar);
  addEditActions(bar);
  addDigitSources(bar);
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
  brush_slider_->setMaximumWidth(110);
  brush_slider_->setToolTip(tr("Brush radius in canvas pixels"));
  connect(brush_slider_, &QSlider::valueChanged, this, [this](int v) { canvas_->setBrushRadius(v / 2.0); });
  bar->addWidget(brush_slider_);

  bar->addWidget(new QLabel(tr("  Patch "), this));
  patch_box_ = new QComboBox(this);
  for (int p : kPatchSizes) patch_box_->addItem(QString("%1 px (%2x%2 tokens)").arg(p).arg(84 / p), p);
  patch_box_->setCurrentIndex(patch_box_->findData(12));
  patch_box_->setToolTip(tr("ViT patch size: the grid drawn over the canvas"));
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
  bar->addSeparator();

}

// Where a digit comes from: a picture, or a random MNIST test digit.
void MainWindow::addDigitSources(QToolBar* bar) {
  QAction* open = bar->addAction(tr("Open image…"));
  open->setShortcut(QKeySequence::Open);
  open->setToolTip(tr("Put a PNG or JPEG of a handwritten digit on the canvas, prepared as MNIST was (Ctrl+O)"));
  connect(open, &QAction::triggered, this, [this] {
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a picture of a digit"),
                                                      settings.value("canvas/imageDir").toString(),
                                                      tr("Images (*.png *.jpg *.jpeg);;All files (*)"));
    if (path.isEmpty()) return;
    settings.setValue("canvas/imageDir", QFileInfo(path).absolutePath());
    const QString error = openImage(path);
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Cannot use this image"), error);
  });
  random_action_ = bar->addAction(tr("Random test digit"));
  random_action_->setShortcut(QKeySequence("R"));
  random_action_->setToolTip(tr("Place a random MNIST test digit on the canvas (R)"));
  random_action_->setEnabled(false);
  connect(random_action_, &QAction::triggered, this, &MainWindow::showRandomDigit);
  placement_box_ = new QComboBox(this);
  placement_box_->addItem(tr("centred (static)"), int(CanvasKind::Static));
  placement_box_->addItem(tr("anywhere (dynamic)"), int(CanvasKind::Dynamic));
  placement_box_->setToolTip(tr("Where a random test digit is placed"));
  bar->addWidget(placement_box_);
}

QString MainWindow::openImage(const QString& path) {
  try {
    const int64_t size = canvas_->canvasSize();
    const Placement centre{(size - 28) / 2, (size - 28) / 2};
    canvas_->setPixels(compose_canvas(prepare_digit(read_image_gray(path.toStdString())), size, centre));
    last_sample_ = QFileInfo(path).fileName();
    robustness_->setKnownLabel(-1);
    updateCanvasStatus();
    return {};
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

void MainWindow::showRandomDigit() {
  if (!digits_->ready()) return;
  const auto kind = CanvasKind(placement_box_->currentData().toInt());
  const auto s = digits_->random(kind);
  showTestDigit(kind, s.index);
}

bool MainWindow::showTestDigit(CanvasKind kind, int64_t index) {
  if (!digits_->ready() || index < 0 || index >= digits_->size()) return false;
  const auto s = digits_->sample(kind, index);
  last_sample_ = tr("test #%1 (label %2, %3)").arg(s.index).arg(s.label).arg(canvas_kind_name(kind));
  canvas_->setPixels(s.pixels);
  robustness_->setKnownLabel(int(s.label));
  return true;
}

void MainWindow::updateCanvasStatus() {
  const QPointF c = canvas_->massCentre();
  QString text = c.x() < 0 ? tr("Empty canvas: draw a digit or press R")
                           : tr("Ink centre at (%1, %2)").arg(c.x(), 0, 'f', 1).arg(c.y(), 0, 'f', 1);
  if (!last_sample_.isEmpty()) text += "  ·  " + last_sample_;
  canvas_status_->setText(text);
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
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (training_->hasUnsavedRun() && !qEnvironmentVariableIsSet("TRANSLUTION_NO_DIALOGS")) {
    const auto answer = QMessageBox::question(
        this, tr("Discard the training run?"),
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
