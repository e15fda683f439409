#pragma once
// The studio's main window: the digit canvas on the left with its tools in a
// tool bar, the panels (comparison, ...) in tabs on the right, and a status bar.
#include <QMainWindow>

#include "data/canvas_dataset.h"

class QActionGroup;
class QComboBox;
class QToolBar;
class QLabel;
class QSlider;
class QSplitter;
class QTabWidget;

namespace translution::ui {

class AttentionPanel;
class ComparePanel;
class OffsetPanel;
class RobustnessPanel;
class TrainingPanel;
class DigitCanvas;
class TestDigitSource;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const QString& data_dir, QWidget* parent = nullptr);
  ~MainWindow() override;

  DigitCanvas* canvas() const { return canvas_; }
  TestDigitSource* digits() const { return digits_; }
  ComparePanel* compare() const { return compare_; }
  AttentionPanel* attention() const { return attention_; }
  OffsetPanel* offsets() const { return offsets_; }
  TrainingPanel* training() const { return training_; }
  RobustnessPanel* robustness() const { return robustness_; }
  QTabWidget* tabs() const { return tabs_; }
  // True while any panel is loading a model or computing (screenshots wait for it).
  bool busy() const;

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

 public:
  // Whether the canvas warns that the ink is far larger than MNIST's digits.
  bool scaleWarningVisible() const;

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildToolBar();
  void addToolActions(QToolBar* bar);
  void addBrushAndGrid(QToolBar* bar);
  void addEditActions(QToolBar* bar);
  void addDigitSources(QToolBar* bar);
  void restoreSettings();
  void updateCanvasStatus();
  void loadDefaultSlots();
  void updateScaleWarning();
  QWidget* buildCanvasPane();

  DigitCanvas* canvas_;
  QSplitter* splitter_;
  QTabWidget* tabs_;
  ComparePanel* compare_;
  AttentionPanel* attention_ = nullptr;
  OffsetPanel* offsets_ = nullptr;
  TrainingPanel* training_ = nullptr;
  RobustnessPanel* robustness_ = nullptr;
  TestDigitSource* digits_;
  QComboBox* patch_box_ = nullptr;
  QComboBox* placement_box_ = nullptr;
  QSlider* brush_slider_ = nullptr;
  QAction* random_action_ = nullptr;
  QLabel* canvas_status_ = nullptr;
  QLabel* data_status_ = nullptr;
  QWidget* scale_warning_ = nullptr;
  QLabel* scale_text_ = nullptr;
  QString last_sample_;
};

}  // namespace translution::ui
