#include "protocol_box.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent>

#include "bundled_models.h"
#include "layout_box.h"
#include "method_titles.h"
#include "model_slot.h"
#include "nn/attention_spec.h"
#include "protocol_table.h"
#include "reflow_layout.h"
#include "train/evaluate.h"

namespace translution::ui {
namespace {

const char* const kDefaultMethods[] = {"translution", "lor", "attention"};

QString method_title(const QString& method) { return ui::method_title(method.toStdString()); }

// Label and field pairs (or buttons) left to right, a wider gap between pairs, the spare
// width after them: the fields keep their size however wide the box is.
QHBoxLayout* row_of(std::initializer_list<QWidget*> widgets) {
  auto* row = new QHBoxLayout;
  for (QWidget* w : widgets) {
    if (row->count() > 0 && qobject_cast<QLabel*>(w)) row->addSpacing(12);
    row->addWidget(w);
  }
  row->addStretch(1);
  return row;
}

QSpinBox* spin(QWidget* parent, int low, int high, int value, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setRange(low, high);
  box->setValue(value);
  box->setToolTip(tip);
  return box;
}

struct PairAccuracy {
  QString method;
  double static_static = 0, dynamic_dynamic = 0, static_dynamic = 0;
  QString error;  // why the pair could not be evaluated
};

// One bundled pair: the static model on static and dynamic test digits, the dynamic one on dynamic digits.
PairAccuracy evaluate_pair(const EngineOptions& engine, const QString& method, const std::string& dir,
                           int64_t samples) try {
  const auto static_model = load_predictor(engine, bundled_model(method + "-static"), "cpu");
  const auto dynamic_model = load_predictor(engine, bundled_model(method), "cpu");
  auto accuracy = [&](const std::shared_ptr<const Predictor>& p, const char* kind) {
    CanvasDataset test = dataset_for_model(p->config(), kind, Split::Test, dir);
    return evaluate(p->engine(), p->model(), test, samples, 256, c10::kCPU).accuracy;
  };
  return {method,
          accuracy(static_model, "static"),
          accuracy(dynamic_model, "dynamic"),
          accuracy(static_model, "dynamic"),
          {}};
} catch (const std::exception& e) {
  return {method, 0, 0, 0, QString::fromStdString(e.what())};
}

}  // namespace

QString ProtocolBox::pairName(const QString& method, bool bundled) {
  return tr("%1 (%2)").arg(method_title(method), bundled ? tr("bundled") : tr("trained here"));
}

ProtocolBox::ProtocolBox(const EngineOptions& engine, QString data_dir, QWidget* parent)
    : QGroupBox(
          tr("The papers' protocol: train on centred digits (S) or digits anywhere (D), test on either"),
          parent),
      engine_(engine),
      data_dir_(std::move(data_dir)),
      table_(new ProtocolTable(this)),
      runner_(new ExperimentRunner(engine_, data_dir_, this)) {
  auto* layout = new QVBoxLayout(this);
  // As tall as its rows, up to five (then it scrolls), the controls right beneath: a frame
  // stretched past its rows reads as results missing and pushes the controls below the fold.
  table_->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Maximum);
  // As wide as its columns; a page narrower than that scrolls the table, never cuts its numbers.
  table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  table_->setMaximumHeight(190);
  layout->addWidget(table_, 0, Qt::AlignLeft);
  buildControls(layout);
  layout->addStretch(1);
  connect(runner_, &ExperimentRunner::progress, this, [this](double fraction, const QString& what) {
    progress_->setRange(0, 1000);
    progress_->setValue(int(1000 * fraction));
    status_->setText(what);
  });
  connect(runner_, &ExperimentRunner::accuracy, this,
          [this](const QString& method, int column, double value) {
            table_->setAccuracy(pairName(method, false), ProtocolTable::Column(column), value);
          });
  connect(runner_, &ExperimentRunner::trained, this, &ProtocolBox::addTrainedModel);
  connect(runner_, &ExperimentRunner::swept, this, [this](const QString& method, const SweepResult& r) {
    Q_EMIT sweepReady(tr("%1 (S)").arg(method_title(method)), r);
  });
  connect(runner_, &ExperimentRunner::finished, this, [this](const QString& error) {
    run_->setEnabled(true);
    stop_->setEnabled(false);
    progress_->setValue(progress_->maximum());
    progress_->setFormat(error.isEmpty() ? tr("Done") : tr("Ended"));
    status_->setText(error.isEmpty() ? tr("Experiment done: every model is in the list below the table.")
                                     : tr("Experiment ended: %1").arg(error));
    Q_EMIT finished();
  });
}

// The bundled pairs' evaluation, then the experiment: which methods, its budget, run and stop.
void ProtocolBox::buildControls(QBoxLayout* layout) {
  evaluate_ = new QPushButton(tr("Evaluate bundled pairs"), this);
  evaluate_->setToolTip(
      tr("Fill the table from the bundled models: each method trained on centred digits and on "
         "digits anywhere"));
  test_digits_ = spin(this, 10, 10000, 1000, tr("Test digits per test set"));
  layout->addLayout(row_of({evaluate_, new QLabel(tr("Test digits"), this), test_digits_}));
  layout->addLayout(buildMethodBoxes());
  train_digits_ = spin(this, 100, 60000, 12000, tr("The first N training digits, for each model"));
  epochs_ = spin(this, 1, 100, 2, tr("Passes over those digits"));
  depth_ = spin(this, 1, 12, 2, tr("Blocks of the tiny ViT (dim 64, one head, patch 12)"));
  layout_ =
      make_layout_box(this, "experimentLayout",
                      tr("How every model's attention reads the patches: 2-D offsets, or the patches row by "
                         "row with 1-D offsets (causal: each patch sees only earlier ones)"));
  layout->addLayout(row_of({new QLabel(tr("Digits"), this), train_digits_, new QLabel(tr("Epochs"), this),
                            epochs_, new QLabel(tr("Depth"), this), depth_}));
  layout->addLayout(row_of({new QLabel(tr("Layout"), this), layout_}));
  run_ = new QPushButton(tr("Run experiment"), this);
  run_->setToolTip(
      tr("For each ticked method, train one model on centred digits and one on digits anywhere, then "
         "evaluate both and sweep the centred one across the canvas"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setEnabled(false);
  layout->addLayout(row_of({run_, stop_}));
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("Nothing run yet"));  // words, as the sweep's and shift metrics' bars say
  status_ = new QLabel(tr("Evaluate the bundled pairs, or train your own."), this);
  status_->setWordWrap(true);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addLayout(buildTrainedModels());
  connect(evaluate_, &QPushButton::clicked, this, &ProtocolBox::evaluateBundledPairs);
  connect(run_, &QPushButton::clicked, this, &ProtocolBox::runExperiment);
  connect(stop_, &QPushButton::clicked, this, &ProtocolBox::stopExperiment);
  connect(save_, &QPushButton::clicked, this, &ProtocolBox::saveTrainedModel);
}

// "Train:" and the methods worth comparing, up to three a row (fewer on a narrow page),
// so that the box stays narrow enough to leave the canvas room.
QLayout* ProtocolBox::buildMethodBoxes() {
  auto* row = new QHBoxLayout;
  auto* methods = new ReflowLayout(3);
  methods->setColumnGap(16);
  auto* label = new QLabel(tr("Train:"), this);
  row->addWidget(label, 0, Qt::AlignTop);
  row->addLayout(methods);
  row->addStretch(1);  // the spare width right of the boxes, not between them
  for (const AttentionChoice& c : attention_choices()) {
    const QString name = QString::fromStdString(c.name);
    const bool shown = name == "translution" || name == "lor" || name == "attention" || name == "rope" ||
                       name == "rel-bias" || name == "attention-nope" || name == "rope-translution" ||
                       name == "lor-rope-translution";
    if (!shown) continue;
    auto* box = new QCheckBox(method_title(c.name), this);
    box->setProperty("method", name);  // the CLI name the experiment trains
    box->setToolTip(QString::fromStdString(c.description));
    box->setChecked(name == "translution" || name == "lor" || name == "attention");
    methods->addWidget(box);
    method_boxes_ << box;
  }
  label->setMinimumHeight(method_boxes_.first()->sizeHint().height());  // level with the first row
  return row;
}

// The models the experiment trained: pick one, send it to a slot or save it.
QLayout* ProtocolBox::buildTrainedModels() {
  auto* models = new QHBoxLayout;
  trained_ = new QComboBox(this);
  trained_->setToolTip(tr("Models the experiment trained"));
  trained_->setPlaceholderText(tr("no trained models yet"));
  send_ = new QToolButton(this);
  send_->setText(tr("To slot"));
  send_->setPopupMode(QToolButton::InstantPopup);
  send_->setMenu(new QMenu(send_));
  save_ = new QPushButton(tr("Save…"), this);
  models->addWidget(new QLabel(tr("Trained"), this));
  models->addWidget(trained_, 1);
  models->addWidget(send_);
  models->addWidget(save_);
  send_->setEnabled(false);
  save_->setEnabled(false);
  return models;
}

QStringList ProtocolBox::methods() const {
  QStringList out;
  for (QCheckBox* b : method_boxes_)
    if (b->isChecked()) out << b->property("method").toString();
  return out;
}

void ProtocolBox::setMethods(const QStringList& methods) {
  for (QCheckBox* b : method_boxes_) b->setChecked(methods.contains(b->property("method").toString()));
}

ExperimentBudget ProtocolBox::budget() const {
  ExperimentBudget b;
  b.train_digits = train_digits_->value();
  b.epochs = epochs_->value();
  b.depth = depth_->value();
  b.layout = layout_->currentData().toString().toStdString();
  b.test_digits = test_digits_->value();
  return b;
}

void ProtocolBox::setBudget(const ExperimentBudget& b) {
  train_digits_->setValue(int(b.train_digits));
  epochs_->setValue(int(b.epochs));
  depth_->setValue(int(b.depth));
  layout_->setCurrentIndex(std::max(0, layout_->findData(QString::fromStdString(b.layout))));
  test_digits_->setValue(int(b.test_digits));
}

QString ProtocolBox::status() const { return status_->text(); }

void ProtocolBox::setSlots(const QList<ModelSlot*>& slots) {
  slots_ = slots;
  updateSendMenu();
}

void ProtocolBox::evaluateBundledPairs() {
  if (evaluating_) return;  // the one running fills the same rows
  QStringList methods;
  for (const char* m : kDefaultMethods)
    if (!bundled_model(m).isEmpty() && !bundled_model(QString(m) + "-static").isEmpty()) methods << m;
  if (methods.isEmpty()) {
    status_->setText(tr("This build bundles no static and dynamic pair (see scripts/train_pretrained.sh)."));
    return;
  }
  evaluating_ = true;
  evaluate_->setEnabled(false);
  progress_->setRange(0, 0);
  status_->setText(tr("Evaluating the bundled pairs on %1 test digits per set…").arg(test_digits_->value()));
  const std::string dir = data_dir_.toStdString();
  const int64_t samples = test_digits_->value();
  // The rows in the methods' order, whichever pair's evaluation finishes first.
  for (const QString& m : methods) table_->addPair(pairName(m, true));
  auto* watcher = new QFutureWatcher<PairAccuracy>(this);
  // One pair a task, so each row fills in as soon as it is known.
  connect(watcher, &QFutureWatcher<PairAccuracy>::resultReadyAt, this, [this, watcher](int i) {
    const PairAccuracy a = watcher->resultAt(i);
    if (!a.error.isEmpty()) {
      evaluation_error_ = a.error;
      table_->removeEmptyPair(pairName(a.method, true));
      return;
    }
    const QString row = pairName(a.method, true);
    table_->setAccuracy(row, ProtocolTable::kStaticToStatic, a.static_static);
    table_->setAccuracy(row, ProtocolTable::kDynamicToDynamic, a.dynamic_dynamic);
    table_->setAccuracy(row, ProtocolTable::kStaticToDynamic, a.static_dynamic);
  });
  connect(watcher, &QFutureWatcher<PairAccuracy>::finished, this, [this, watcher] {
    watcher->deleteLater();
    evaluating_ = false;
    evaluate_->setEnabled(true);
    progress_->setRange(0, 1);
    progress_->setValue(1);
    progress_->setFormat(evaluation_error_.isEmpty() ? tr("Done") : tr("Evaluation failed"));
    const QString error = evaluation_error_;
    evaluation_error_.clear();
    status_->setText(error.isEmpty()
                         ? tr("S→D is the papers' point: trained on centred digits, tested on moved ones.")
                         : tr("Evaluation failed: %1").arg(error));
    Q_EMIT finished();
  });
  watcher->setFuture(QtConcurrent::mapped(methods, [engine = engine_, dir, samples](const QString& m) {
    return evaluate_pair(engine, m, dir, samples);
  }));
}

void ProtocolBox::runExperiment() {
  if (runner_->running()) return;
  const QStringList chosen = methods();
  if (chosen.isEmpty()) {
    status_->setText(tr("Tick at least one method."));
    return;
  }
  try {
    runner_->start(chosen, budget());
  } catch (const std::exception& e) {
    status_->setText(tr("Cannot start: %1").arg(QString::fromStdString(e.what())));
    return;
  }
  for (const QString& m : chosen) table_->removeRow(table_->rowOf(pairName(m, false)));
  trained_->clear();
  send_->setEnabled(false);
  save_->setEnabled(false);
  run_->setEnabled(false);
  stop_->setEnabled(true);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat(tr("Training and testing: %p%"));
}

void ProtocolBox::stopExperiment() { runner_->stop(); }

void ProtocolBox::addTrainedModel(const QString& method, const QString& dataset) {
  trained_->addItem(tr("%1, trained on %2 digits")
                        .arg(method_title(method), dataset == "static" ? tr("centred") : tr("moved")),
                    method + "/" + dataset);
  trained_->setCurrentIndex(trained_->count() - 1);
  send_->setEnabled(true);
  save_->setEnabled(true);
}

void ProtocolBox::updateSendMenu() {
  QMenu* menu = send_->menu();
  menu->clear();
  for (ModelSlot* slot : slots_) {
    menu->addAction(tr("Slot %1").arg(slot->name()), this, [this, slot] {
      const QString error = sendToSlot(trained_->currentData().toString(), slot);
      if (!error.isEmpty()) status_->setText(error);
    });
  }
}

QString ProtocolBox::sendToSlot(const QString& key, ModelSlot* slot) {
  const QStringList parts = key.split('/');
  const auto checkpoint = parts.size() == 2 ? runner_->model(parts[0], parts[1]) : nullptr;
  if (!checkpoint) return tr("No trained model %1").arg(key);
  auto predictor =
      std::make_shared<const Predictor>(engine_, copy_checkpoint(*checkpoint), key.toStdString(), c10::kCPU);
  return slot->setPredictor(
      predictor, tr("%1 (experiment)").arg(trained_->itemText(trained_->findData(key))),
      tr("A model the experiment on the Robustness tab trained (Save… there keeps it)"));
}

void ProtocolBox::saveTrainedModel() {
  const QString key = trained_->currentData().toString();
  const QStringList parts = key.split('/');
  const auto checkpoint = parts.size() == 2 ? runner_->model(parts[0], parts[1]) : nullptr;
  if (!checkpoint) return;
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save the trained model"),
                                   QString(key).replace('/', '-') + ".ckpt", tr("Checkpoints (*.ckpt)"));
  if (path.isEmpty()) return;
  try {
    save_checkpoint(path.toStdString(), *checkpoint);
    status_->setText(tr("Saved %1").arg(path));
  } catch (const std::exception& e) {
    status_->setText(tr("Cannot save %1: %2").arg(path, QString::fromStdString(e.what())));
  }
}

}  // namespace translution::ui
