#pragma once
// The papers' protocol in the Robustness tab: train on centred (static) digits,
// test on moved (dynamic) ones. The table fills from the bundled model pairs by
// evaluation alone, or from an experiment the user runs here: any methods, at a
// budget they set, trained in the background, each model then available to save
// or to send to a comparison slot.
#include <QGroupBox>
#include <QList>

#include "experiment_runner.h"

class QBoxLayout;
class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace translution::ui {

class ModelSlot;
class ProtocolTable;

class ProtocolBox : public QGroupBox {
  Q_OBJECT
 public:
  // Its bundled pairs, experiments and the models it sends to slots compute under `engine`.
  ProtocolBox(const EngineOptions& engine, QString data_dir, QWidget* parent = nullptr);
  ProtocolTable* table() const { return table_; }
  ExperimentRunner* runner() const { return runner_; }
  bool busy() const { return evaluating_ || runner_->running(); }
  // The methods ticked and the budget set, as the next experiment would use them.
  QStringList methods() const;
  ExperimentBudget budget() const;
  void setBudget(const ExperimentBudget& budget);  // tests and demos: a small run
  void setMethods(const QStringList& methods);
  void setSlots(const QList<ModelSlot*>& slots);
  QString status() const;
  // The row name a pair gets: "Translution (bundled)", "LoR-Translution (trained here)".
  static QString pairName(const QString& method, bool bundled);

 public Q_SLOTS:
  void evaluateBundledPairs();
  void runExperiment();
  void stopExperiment();
  // A model the experiment trained ("lor/static"), into `slot`; returns an error message.
  QString sendToSlot(const QString& key, translution::ui::ModelSlot* slot);

 Q_SIGNALS:
  void sweepReady(const QString& title, const translution::SweepResult& result);
  void finished();  // an evaluation or experiment ended

 private:
  void buildControls(QBoxLayout* layout);
  QLayout* buildMethodBoxes();
  QLayout* buildTrainedModels();
  void addTrainedModel(const QString& method, const QString& dataset);
  void saveTrainedModel();
  void updateSendMenu();

  EngineOptions engine_;
  QString data_dir_;
  QList<ModelSlot*> slots_;
  ProtocolTable* table_;
  ExperimentRunner* runner_;
  QList<QCheckBox*> method_boxes_;
  QSpinBox *train_digits_, *epochs_, *depth_, *test_digits_;
  QComboBox* layout_;  // ExperimentBudget::layout
  QPushButton *evaluate_, *run_, *stop_, *save_;
  QToolButton* send_;
  QComboBox* trained_;
  QProgressBar* progress_;
  QLabel* status_;
  bool evaluating_ = false;
  QString evaluation_error_;
};

}  // namespace translution::ui
