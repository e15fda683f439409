#pragma once
// The studio's main window: the digit canvas in the centre, its tools in a
// tool bar, and a status bar that says where the digit is and what was loaded.
#include <QMainWindow>

#include "data/canvas_dataset.h"

class QActionGroup;
class QComboBox;
class QLabel;
class QSlider;

namespace translution::ui {

class DigitCanvas;
class TestDigitSource;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const QString& data_dir, QWidget* parent = nullptr);
  ~MainWindow() override;

  DigitCanvas* canvas() const { return canvas_; }
  TestDigitSource* digits() const { return digits_; }

 public Q_SLOTS:
  void showRandomDigit();
  // Puts test digit `index` of `kind` on the canvas (when the digits are loaded).
  bool showTestDigit(translution::CanvasKind kind, int64_t index);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildToolBar();
  void restoreSettings();
  void updateCanvasStatus();

  DigitCanvas* canvas_;
  TestDigitSource* digits_;
  QComboBox* patch_box_ = nullptr;
  QComboBox* placement_box_ = nullptr;
  QSlider* brush_slider_ = nullptr;
  QAction* random_action_ = nullptr;
  QLabel* canvas_status_ = nullptr;
  QLabel* data_status_ = nullptr;
  QString last_sample_;
};

}  // namespace translution::ui
