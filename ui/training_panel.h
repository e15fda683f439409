#pragma once
// Training in the studio: configure a run (method, size, patch, dataset,
// schedule, seed, device), start, pause, resume, stop; a progress bar with ETA;
// live loss and accuracy curves (train and held-out test) for every run of the
// session on shared axes, one colour per run, the key beneath the curves; save,
// resume from a checkpoint, send the model to a comparison slot, export the
// curves as CSV. Under the form, the run's estimated
// memory against what the machine has; a run that will not fit is refused
// unless the user says to run it anyway.
#include <QList>
#include <QWidget>

#include "qcustomplot_include.h"
#include "train/memory_guard.h"
#include "training_run.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QHBoxLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QToolButton;
class QVBoxLayout;

namespace translution::ui {

class ModelSlot;

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  // Its runs compute under `engine` (each with the precision its form asks for).
  TrainingPanel(const EngineOptions& engine, QString data_dir, const QList<ModelSlot*>& slots,
                QWidget* parent = nullptr);
  ~TrainingPanel() override;

  // The run the buttons act on (the latest one), or nullptr.
  TrainingRun* current() const { return runs_.isEmpty() ? nullptr : runs_.back().run; }
  bool hasUnsavedRun() const;
  QCustomPlot* lossPlot() const { return loss_plot_; }
  QCustomPlot* accuracyPlot() const { return accuracy_plot_; }
  int runCount() const { return runs_.size(); }
  // The form's choices as configs (throws translution::Error for impossible ones).
  ViTConfig modelConfig() const;
  TrainConfig trainConfig() const;
  void setQuickRun(int64_t steps, int64_t train_samples);  // for tests and demos: a short run
  // The form's run against the memory available (train/memory_guard.h), as the
  // label under the form shows it; throws translution::Error for impossible choices.
  MemoryCheck memoryCheck() const;
  QLabel* memoryLabel() const { return memory_; }
  // The comparison slots a run can be sent to (they change as slots are added and removed).
  void setSlots(const QList<ModelSlot*>& slots);

 public Q_SLOTS:
  void startRun();
  void togglePause();
  void stopRun();
  void saveRun();
  void resumeFromFile();
  void exportCurves();  // asks for a file, then exportCurvesTo()

 public:
  // Writes every run's curves as CSV to `path` (checked first: never over a
  // folder, device or pipe). Returns why it could not, empty when it did; the
  // reason also goes to the status line (and a dialog, where dialogs are allowed).
  QString exportCurvesTo(const QString& path);
  // The button that sends the latest run's model to a slot: its menu holds one action per slot.
  QToolButton* sendButton() const { return send_; }
  QPushButton* startButton() const { return start_; }

 Q_SIGNALS:
  void runFinished(int event);

 private:
  struct Series {
    TrainingRun* run;
    QCPGraph *train_loss, *test_loss, *train_accuracy, *test_accuracy;
  };
  void buildForm();
  QFormLayout* buildModelFields();
  QHBoxLayout* buildLorFields();
  QHBoxLayout* buildHybridFields();
  QFormLayout* buildRunFields();
  QWidget* buildControls();
  void placeControls();
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void connectForm();
  void addRun(TrainingRun* run);
  void onProgress(const TrainProgress& p);
  void updateButtons();
  void sendToSlot(ModelSlot* slot);
  QToolButton* buildSendButton();
  void setTabChain();
  void showError(const QString& what, const QString& message);
  void watchMemory();
  void updateMemory();
  void showMemory(const MemoryCheck& check);
  // Whether a run that does not fit starts anyway: a dialog names the numbers and
  // offers "Run anyway"; without dialogs (TRANSLUTION_NO_DIALOGS) it never does.
  bool confirmMemory(const MemoryCheck& check);

  EngineOptions engine_;
  QString data_dir_;
  QList<ModelSlot*> slots_;
  QList<Series> runs_;
  QComboBox *method_, *preset_, *patch_, *dataset_, *device_;
  QSpinBox *depth_, *epochs_, *steps_, *batch_, *seed_, *samples_;
  QCheckBox* fresh_positions_;
  QSpinBox* lor_c1_;
  QSpinBox* lor_c2_;
  QCheckBox* lor_shared_;
  QCheckBox* lor_value_slices_;  // ViTConfig::lor_value_slices
  QComboBox* first_model_;       // empty data: no hybrid
  QComboBox* layout_;            // ViTConfig::layout
  QSpinBox* first_blocks_;
  QCheckBox* bf16_;  // TrainConfig::precision (enabled where cpu/bf16_gemm.h runs)
  QDoubleSpinBox* lr_;
  QPushButton *start_ = nullptr, *pause_, *stop_, *save_, *resume_file_, *export_;
  QToolButton* send_ = nullptr;  // clicked: the last slot chosen; its arrow: every slot
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* memory_ = nullptr;  // the form's estimate: "needs ~2.9 GB of 21.3 GB available"
  QCustomPlot *loss_plot_, *accuracy_plot_;
  QWidget* page_ = nullptr;      // the form, the controls where they fit, and the curves; it scrolls
  QWidget* form_ = nullptr;      // the "Run" box
  QWidget* controls_ = nullptr;  // buttons, progress and status: on the page, or pinned beneath it
};

}  // namespace translution::ui
