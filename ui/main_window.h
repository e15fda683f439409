#pragma once
// The studio's main window: the digit canvas on the left with its tools in a
// tool bar, the panels (comparison, attention, offsets, training, robustness) in
// tabs on the right, a menu bar (File, View, Help) and a status bar that says what
// the canvas shows.
#include <QMainWindow>

#include "data/canvas_dataset.h"
#include "util/engine_options.h"

class QAction;
class QComboBox;
class QLabel;
class QMenu;
class QSlider;
class QSplitter;
class QTabWidget;
class QToolBar;

namespace translution::ui {

class AttentionPanel;
class AttributionPanel;
class ComparePanel;
class DigitCanvas;
class OffsetPanel;
class RobustnessPanel;
class TestDigitSource;
class TrainingPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // Every model the window runs (its slots, training runs and experiments) computes under `engine`.
  MainWindow(const EngineOptions& engine, const QString& data_dir, QWidget* parent = nullptr);
  ~MainWindow() override;

  DigitCanvas* canvas() const { return canvas_; }
  TestDigitSource* digits() const { return digits_; }
  ComparePanel* compare() const { return compare_; }
  AttentionPanel* attention() const { return attention_; }
  OffsetPanel* offsets() const { return offsets_; }
  TrainingPanel* training() const { return training_; }
  RobustnessPanel* robustness() const { return robustness_; }
  AttributionPanel* attribution() const { return attribution_; }
  QTabWidget* tabs() const { return tabs_; }
  // True while any panel is loading a model or computing (screenshots wait for it).
  bool busy() const;
  // What the status bar says about the canvas (its ink, and what it shows).
  QString canvasStatus() const;
  // Whether the canvas warns that the ink is far larger than MNIST's digits.
  bool scaleWarningVisible() const;
  // The help text ("What am I looking at?") of tab `index`.
  QString helpText(int index) const;

 public Q_SLOTS:
  void showRandomDigit();
  // Puts test digit `index` of `kind` on the canvas (when the digits are loaded).
  bool showTestDigit(translution::CanvasKind kind, int64_t index);
  // Puts a PNG/JPEG of a digit on the canvas, prepared as `translution predict` does;
  // returns an error message (empty on success).
  QString openImage(const QString& path);
  // Rescales and centres the ink exactly as `translution predict` prepares an image
  // (20 px on its longer side, centred by mass); false for an empty canvas.
  bool fitToMnist();
  // Saves a picture of the current tab (PNG, SVG or PDF by suffix); returns an error, empty on success.
  QString savePicture(const QString& path);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void buildPanels(const EngineOptions& engine, const QString& data_dir);
  void connectPanels();
  void connectDigits();
  void buildStatusBar();
  void buildToolBar();
  void buildMenus();
  void buildFileMenu(QMenu* menu);
  void buildViewMenu(QMenu* menu);
  void buildHelpMenu(QMenu* menu);
  void addToolActions(QToolBar* bar);
  void addBrushAndGrid(QToolBar* bar);
  void addEditActions(QToolBar* bar);
  void addDigitSources(QToolBar* bar);
  void wrapToolBars();
  QWidget* buildCanvasPane();
  void chooseImage();
  void chooseCheckpoint(int slot_index);
  void choosePictureFile();
  void fitWindowToScreen();
  void restoreSettings();
  void updateCanvasStatus();
  void updateSlotActions();
  void loadDefaultSlots();
  void updateScaleWarning();

  DigitCanvas* canvas_ = nullptr;
  QSplitter* splitter_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  ComparePanel* compare_ = nullptr;
  AttentionPanel* attention_ = nullptr;
  OffsetPanel* offsets_ = nullptr;
  TrainingPanel* training_ = nullptr;
  RobustnessPanel* robustness_ = nullptr;
  AttributionPanel* attribution_ = nullptr;
  TestDigitSource* digits_ = nullptr;
  QComboBox* patch_box_ = nullptr;
  QComboBox* placement_box_ = nullptr;
  QSlider* brush_slider_ = nullptr;
  QToolBar* canvas_bar_ = nullptr;
  QToolBar* digits_bar_ = nullptr;  // beside canvas_bar_, or beneath it where both do not fit
  QAction* open_image_ = nullptr;
  QAction* random_action_ = nullptr;
  QAction* add_slot_ = nullptr;
  QAction* remove_slot_ = nullptr;
  QMenu* checkpoint_menu_ = nullptr;
  QLabel* canvas_status_ = nullptr;
  QLabel* data_status_ = nullptr;
  QWidget* scale_warning_ = nullptr;
  QLabel* scale_text_ = nullptr;
};

}  // namespace translution::ui
