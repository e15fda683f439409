#include "sweep_panel.h"

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

#include "model_slot.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::ui {
namespace {

QString describe(const SweepOptions& o) {
  return QObject::tr("%1 digits every %2 px").arg(o.digits).arg(o.stride);
}

// "A: translution (S)" -> "A-translution-S", for a file name.
QString file_part(const QString& title) {
  QString part = title;
  part.replace(QRegularExpression("[^A-Za-z0-9]+"), "-");
  return part.remove(QRegularExpression("^-+|-+$"));
}

}  // namespace

SweepPanel::SweepPanel(QString data_dir, const QList<ModelSlot*>& slots, QWidget* parent)
    : QGroupBox(tr("Translation sweep: accuracy at each position"), parent), data_dir_(std::move(data_dir)) {
  digits_ = new QSpinBox(this);
  digits_->setRange(1, 10000);
  digits_->setValue(100);
  digits_->setToolTip(tr("The first N test digits are placed at every position"));
  stride_ = new QSpinBox(this);
  stride_->setRange(1, 28);
  stride_->setValue(2);
  stride_->setToolTip(tr("Pixels between positions"));
  sweep_ = new QPushButton(tr("Sweep the slots"), this);
  sweep_->setToolTip(
      tr("Every slot's model at every position: a coarse map first, then refined to these settings"));
  save_ = new QPushButton(tr("Save CSV…"), this);
  save_->setToolTip(
      tr("Save each map as a CSV file: x, y, accuracy and the mean probability of the true class"));
  save_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("sweepProgress");
  progress_->setToolTip(tr("Which pass of the sweep runs, and how far it is"));
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("No sweep yet"));
  maps_ = new SweepMaps(this);
  maps_->setToolTip(
      tr("Accuracy with the digit's centre at (x, y); dashed: the model's patch grid; right-click to save"));
  note_ = new QLabel(tr("Sweep the slots to see where on the canvas each model reads the digits."), this);
  note_->setWordWrap(true);
  note_->setToolTip(tr("What the maps show"));
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Digits"), this));
  controls->addWidget(digits_);
  controls->addWidget(new QLabel(tr("Stride"), this));
  controls->addWidget(stride_);
  controls->addWidget(sweep_);
  controls->addWidget(save_);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(progress_);
  layout->addWidget(maps_, 1);
  layout->addWidget(note_);
  connect(sweep_, &QPushButton::clicked, this, &SweepPanel::runSweep);
  connect(save_, &QPushButton::clicked, this, &SweepPanel::chooseCsvFile);
  setSlots(slots);
}

void SweepPanel::setSlots(const QList<ModelSlot*>& slots) { slots_ = slots; }

QString SweepPanel::note() const { return note_->text(); }

QString SweepPanel::progressText() const { return progress_->text(); }

void SweepPanel::showSweep(const QString& title, const SweepResult& result, int patch, const QColor& colour) {
  bool replaced = false;
  for (TitledSweep& s : sweeps_)
    if (s.title == title) {
      s = TitledSweep{title, result, patch, colour};
      replaced = true;
    }
  if (!replaced) sweeps_ << TitledSweep{title, result, patch, colour};
  while (sweeps_.size() > 4) sweeps_.removeFirst();
  maps_->showSweeps(sweeps_);
  save_->setEnabled(true);
}

void SweepPanel::runSweep() {
  const QList<SlotWork> work = loaded_slots(slots_);
  if (work.isEmpty()) {
    note_->setText(tr("Load a model into a slot first."));
    return;
  }
  const NewestRun::Ticket run = run_.start();  // a run still going is superseded
  const int generation = run.generation;
  std::vector<SweepModel> models;
  for (const SlotWork& s : work)
    models.push_back({s.predictor->model(), s.predictor->device(), s.predictor->engine()});
  const auto planned = progressive_passes({digits_->value(), stride_->value()});
  const QList<SweepOptions> passes(planned.begin(), planned.end());
  ++busy_;
  sweep_->setEnabled(false);
  showProgress(0, passes, 0, 1);
  struct Out {
    std::vector<SweepResult> results;
    QString error;
  };
  QPointer<SweepPanel> self = this;
  run_async<Out>(
      this,
      [self, generation, work, models, planned, passes, dir = data_dir_.toStdString(), cancel = run.stop] {
        // Posted to the application, so the panel is looked up on the GUI thread, where it may be deleted.
        auto post = [self, generation](std::function<void(SweepPanel*)> f) {
          QMetaObject::invokeMethod(qApp, [self, generation, f] {
            if (self && self->run_.current(generation)) f(self);
          });
        };
        Out out;
        try {
          const MnistDigits test = load_mnist(dir, Split::Test);
          out.results = progressive_sweep(
              models, test, planned,
              [&](size_t pass, const std::vector<SweepResult>& results) {
                if (pass + 1 == planned.size()) return;  // the last pass is shown when the work is done
                post([=](SweepPanel* p) {
                  p->showPass(work, passes[int(pass)], int(pass), int(passes.size()), results);
                });
              },
              [&](size_t pass, int64_t done, int64_t total) {
                if (*cancel) throw Error("cancelled");  // ends the sweep between positions
                post([=](SweepPanel* p) { p->showProgress(int(pass), passes, done, total); });
              });
        } catch (const std::exception& e) {
          out.error = QString::fromStdString(e.what()).section('\n', 0, 0);
        }
        return out;
      },
      [this, generation, work, passes](const Out& out) {
        --busy_;
        if (!run_.current(generation)) return;  // a newer sweep runs
        if (out.error.isEmpty())
          showPass(work, passes.back(), int(passes.size()) - 1, int(passes.size()), out.results);
        finishSweep(out.error);
      });
}

void SweepPanel::showProgress(int pass, const QList<SweepOptions>& passes, int64_t done, int64_t total) {
  const QString what =
      pass + 1 < passes.size() ? tr("coarse: %1").arg(describe(passes[pass])) : describe(passes[pass]);
  progress_->setFormat(tr("Pass %1 of %2 (%3): %p%").arg(pass + 1).arg(passes.size()).arg(what));
  progress_->setRange(0, int(total));
  progress_->setValue(int(done));
}

void SweepPanel::showPass(const QList<SlotWork>& work, const SweepOptions& options, int pass, int passes,
                          const std::vector<SweepResult>& results) {
  if (pass == 0) sweeps_.clear();  // the slots' maps replace whatever the maps showed
  for (size_t s = 0; s < results.size(); ++s)
    showSweep(short_title(work[int(s)]), results[s], int(work[int(s)].predictor->config().patch),
              slot_colour(work[int(s)].name));
  const bool last = pass + 1 == passes;
  note_->setText(
      (last ? tr("Each map: accuracy over the first %1 test digits with their centre at (x, y), every %2 px.")
            : tr("A coarse first look: %1 test digits every %2 px; refining to the chosen settings."))
          .arg(options.digits)
          .arg(options.stride) +
      tr(" Dashed: the model's patch grid; a centred digit sits at (42, 42). (S): trained on centred digits, "
         "(D): "
         "anywhere."));
  Q_EMIT passShown(pass, passes);
}

void SweepPanel::finishSweep(const QString& error) {
  sweep_->setEnabled(true);
  progress_->setRange(0, 1);
  progress_->setValue(error.isEmpty() ? 1 : 0);
  progress_->setFormat(error.isEmpty() ? tr("Done: %1").arg(describe({digits_->value(), stride_->value()}))
                                       : tr("Sweep failed"));
  if (!error.isEmpty()) note_->setText(tr("Sweep failed: %1").arg(error));
}

void SweepPanel::chooseCsvFile() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save the sweep maps as CSV"), "sweep.csv",
                                                    tr("CSV files (*.csv)"));
  if (!path.isEmpty()) saveCsv(path);
}

QString SweepPanel::saveCsv(const QString& path) {
  QStringList written;
  try {
    const QFileInfo info(path);
    for (const TitledSweep& s : sweeps_) {
      const QString suffix = info.suffix().isEmpty() ? "csv" : info.suffix();
      const QString file =
          sweeps_.size() == 1
              ? path
              : info.dir().filePath(info.completeBaseName() + "-" + file_part(s.title) + "." + suffix);
      write_sweep_csv(checked_output_path(file.toStdString()), s.result);
      written << QFileInfo(file).fileName();
    }
  } catch (const std::exception& e) {
    const QString error = QString::fromStdString(e.what()).section('\n', 0, 0);
    note_->setText(tr("Cannot save the maps: %1").arg(error));
    return error;
  }
  note_->setText(written.isEmpty() ? tr("No maps to save yet.") : tr("Saved %1").arg(written.join(", ")));
  return written.isEmpty() ? tr("no maps to save") : QString();
}

}  // namespace translution::ui
