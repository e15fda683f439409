#include "training_panel.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "cpu/bf16_gemm.h"
#include "layout_box.h"
#include "method_titles.h"
#include "model_slot.h"
#include "nn/attention_spec.h"
#include "plot_export.h"
#include "plot_legend.h"
#include "reflow_layout.h"
#include "scrolling_page.h"
#include "util/device.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::ui {
namespace {

// What an operator is, and the name the command line and checkpoints know it by.
QString operator_tip(const AttentionChoice& c) {
  return QObject::tr("%1 (--model %2)")
      .arg(QString::fromStdString(c.description), QString::fromStdString(c.name));
}

const QColor kRunColours[] = {QColor(31, 119, 180),  QColor(214, 39, 40),  QColor(44, 160, 44),
                              QColor(148, 103, 189), QColor(255, 127, 14), QColor(23, 190, 207),
                              QColor(140, 86, 75),   QColor(227, 119, 194)};

// Words in the middle of an empty plot, so that its bare axes do not read as a run gone wrong;
// the first curve takes them away (add_graph).
void add_placeholder(QCustomPlot* plot) {
  auto* text = new QCPItemText(plot);
  text->setProperty("placeholder", true);
  text->position->setType(QCPItemPosition::ptAxisRectRatio);
  text->position->setCoords(0.5, 0.5);
  text->setText(QObject::tr("No run yet: its curves appear here\nas it trains (Start, above)"));
  text->setColor(QColor(120, 120, 120));
  text->setSelectable(false);
}

QCPGraph* add_graph(QCustomPlot* plot, const QColor& colour, bool test, const QString& name) {
  for (int i = 0; i < plot->itemCount(); ++i)
    if (plot->item(i)->property("placeholder").toBool()) plot->item(i)->setVisible(false);
  QCPGraph* g = plot->addGraph();
  g->setName(name);
  QPen pen(colour, test ? 2.0 : 1.2);
  if (test) {
    pen.setStyle(Qt::DashLine);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, colour, colour, 5));
  }
  g->setPen(pen);
  return g;
}

void style_plot(QCustomPlot* plot, const QString& y_label) {
  // The key names each run once (its colour); the line style is the same for every run, so the axis says it.
  plot->xAxis->setLabel(QObject::tr("epoch (solid: training batches, dashed: held-out test)"));
  plot->yAxis->setLabel(y_label);
  plot->legend->setVisible(false);  // shown once a run is added: an empty legend is a stray box
  plot->legend->setFont(QFont(plot->font().family(), 8));
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->setMinimumHeight(180);  // the y axis's label fits beside the axis with a run's key beneath
  enable_plot_export(plot);
  add_placeholder(plot);
}

}  // namespace

TrainingPanel::TrainingPanel(const EngineOptions& engine, QString data_dir, const QList<ModelSlot*>& slots,
                             QWidget* parent)
    : QWidget(parent), engine_(engine), data_dir_(std::move(data_dir)), slots_(slots) {
  buildForm();
  watchMemory();
  loss_plot_ = new QCustomPlot(this);
  accuracy_plot_ = new QCustomPlot(this);
  style_plot(loss_plot_, tr("cross-entropy loss"));
  style_plot(accuracy_plot_, tr("accuracy"));
  accuracy_plot_->yAxis->setRange(0, 1);
  // Before a run draws anything, the epoch axes span the epochs it would run.
  const auto span_epochs = [this] {
    if (loss_plot_->graphCount() > 0) return;
    for (QCustomPlot* plot : {loss_plot_, accuracy_plot_}) {
      plot->xAxis->setRange(0, std::max(1, epochs_->value()));
      plot->replot(QCustomPlot::rpQueuedReplot);
    }
  };
  span_epochs();
  connect(epochs_, &QSpinBox::valueChanged, this, span_epochs);
  loss_plot_->setToolTip(
      tr("Solid: training batches (mean over 10 steps). Dashed with dots: held-out test digits."));
  accuracy_plot_->setToolTip(loss_plot_->toolTip());
  auto* plots = new QHBoxLayout;
  plots->addWidget(loss_plot_, 1);
  plots->addWidget(accuracy_plot_, 1);
  static_cast<QVBoxLayout*>(page_->layout())->addLayout(plots, 1);
  page_->installEventFilter(this);
  controls_->installEventFilter(this);
  updateButtons();
  setTabChain();
}

void TrainingPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  placeControls();
}

bool TrainingPanel::eventFilter(QObject* watched, QEvent* event) {
  // The form's rows or the status line changed their height: the page may no longer fit.
  if (event->type() == QEvent::LayoutRequest) placeControls();
  return QWidget::eventFilter(watched, event);
}

// The run's controls sit between the form and the curves where the whole page fits the
// panel, and are pinned beneath the scrolling page where it does not (a small screen stacks
// the form into one column), so that Start never scrolls out of view. The choice follows
// from the panel's size alone: moving the controls cannot change it back.
void TrainingPanel::placeControls() {
  auto* page = static_cast<QVBoxLayout*>(page_->layout());
  const QMargins m = page->contentsMargins();
  const int width = this->width() - m.left() - m.right(), gap = page->spacing();
  // The controls' own layout, without the margins they take only when pinned.
  const int whole_page = m.top() + form_->heightForWidth(width) + gap +
                         controls_->layout()->heightForWidth(width) + gap + loss_plot_->minimumHeight() +
                         m.bottom();
  const bool pinned = whole_page > height();
  if (pinned == (controls_->parentWidget() == this)) return;
  // Moving a widget to another parent hides it and takes the focus from inside it.
  QWidget* focused =
      controls_->isAncestorOf(QApplication::focusWidget()) ? QApplication::focusWidget() : nullptr;
  if (pinned) {
    page->removeWidget(controls_);
    controls_->setContentsMargins(m.left(), gap, m.right(), m.bottom());
    static_cast<QVBoxLayout*>(layout())->addWidget(controls_);
  } else {
    layout()->removeWidget(controls_);
    controls_->setContentsMargins(0, 0, 0, 0);
    page->insertWidget(1, controls_);
  }
  controls_->show();
  if (focused) focused->setFocus();
}

// Tab visits the form as it reads (the model's column, then the run's), then the buttons left to right.
void TrainingPanel::setTabChain() {
  const QList<QWidget*> order = {method_,
                                 preset_,
                                 depth_,
                                 patch_,
                                 layout_,
                                 dataset_,
                                 device_,
                                 lor_c1_,
                                 lor_c2_,
                                 lor_shared_,
                                 lor_value_slices_,
                                 first_model_,
                                 first_blocks_,
                                 epochs_,
                                 steps_,
                                 batch_,
                                 lr_,
                                 seed_,
                                 samples_,
                                 fresh_positions_,
                                 bf16_,
                                 start_,
                                 pause_,
                                 stop_,
                                 save_,
                                 resume_file_,
                                 send_,
                                 export_};
  for (int i = 1; i < order.size(); ++i) setTabOrder(order[i - 1], order[i]);
}

TrainingPanel::~TrainingPanel() = default;

void TrainingPanel::buildForm() {
  // The page (form, controls, curves) scrolls; the controls may leave it (placeControls).
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->setSpacing(0);
  page_ = new QWidget(this);
  auto* layout = new QVBoxLayout(page_);
  outer->addWidget(scrolling_page(page_, this), 1);
  auto* box = new QGroupBox(tr("Run"), this);
  form_ = box;
  // The model's column beside the run's where the page is wide enough, else above it.
  auto* columns = new ReflowLayout(2);
  columns->setColumnStretch(0, 0);  // the run's fields right after the model's, the spare width after both
  QFormLayout* model_fields = buildModelFields();
  QFormLayout* run_fields = buildRunFields();
  columns->addLayout(model_fields);
  columns->addLayout(run_fields);
  // One label width for both columns: stacked on a narrow page, their fields start in line.
  QList<QWidget*> labels;
  for (QFormLayout* form : {model_fields, run_fields})
    for (int r = 0; r < form->rowCount(); ++r)
      if (QLayoutItem* item = form->itemAt(r, QFormLayout::LabelRole); item && item->widget())
        labels << item->widget();
  int label_width = 0;
  for (QWidget* label : labels) label_width = std::max(label_width, label->sizeHint().width());
  for (QWidget* label : labels) label->setMinimumWidth(label_width);
  auto* box_layout = new QVBoxLayout;
  box_layout->addLayout(columns);
  memory_ = new QLabel(this);
  box_layout->addWidget(memory_);
  box->setLayout(box_layout);
  // Combo boxes, spin boxes and check boxes differ in height by a pixel or two, and side by
  // side the two columns' rows would drift apart row by row: every field takes a combo box's.
  const int row = method_->sizeHint().height();
  for (QAbstractSpinBox* w : box->findChildren<QAbstractSpinBox*>()) w->setFixedHeight(row);
  for (QCheckBox* w : box->findChildren<QCheckBox*>()) w->setMinimumHeight(row);
  // On a wide screen a field grows no wider than a long operator's name needs (or than its own
  // minimum): a one-digit spin box stretched across half the screen reads as a text field.
  const int widest = 30 * fontMetrics().averageCharWidth();
  for (QWidget* w : box->findChildren<QWidget*>())
    if (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w))
      w->setMaximumWidth(std::max(w->minimumSizeHint().width(), std::min(w->maximumWidth(), widest)));
  layout->addWidget(box);
  layout->addWidget(buildControls());
  connectForm();
}

// The model's fields: method, preset, depth, patch, layout, dataset and device.
QFormLayout* TrainingPanel::buildModelFields() {
  auto* form = new QFormLayout;
  method_ = new QComboBox(this);
  method_->setObjectName("method");
  for (const auto& c : attention_choices())
    method_->addItem(method_title(c.name), QString::fromStdString(c.name));
  for (int i = 0; i < method_->count(); ++i)
    method_->setItemData(i, operator_tip(attention_choices()[size_t(i)]), Qt::ToolTipRole);
  method_->setCurrentIndex(method_->findData("lor"));
  method_->setToolTip(tr("The attention operator every block uses (hover an entry for what it is)"));
  preset_ = new QComboBox(this);
  preset_->setObjectName("preset");
  preset_->addItems({"tiny", "A", "B", "C"});
  preset_->setToolTip(tr("Width and depth: tiny (dim 64, 1 head), A/B/C as in the paper's Table 1"));
  depth_ = new QSpinBox(this);
  depth_->setRange(1, 24);
  depth_->setValue(2);
  depth_->setToolTip(tr("Transformer blocks (the preset sets its own; change it after choosing one)"));
  patch_ = new QComboBox(this);
  patch_->setObjectName("patch");
  for (int p : {7, 12, 14, 21, 28}) patch_->addItem(tr("%1 px").arg(p), p);
  patch_->setCurrentIndex(1);
  patch_->setToolTip(tr("Patch size in pixels: 12 on the 84 x 84 canvas gives a 7 x 7 grid of tokens"));
  dataset_ = new QComboBox(this);
  dataset_->setObjectName("dataset");
  // Worded as the picker and the toolbar word them; the data is the CLI's --dataset.
  dataset_->addItem(tr("digits anywhere (84×84)"), "dynamic");
  dataset_->addItem(tr("centred digits (84×84)"), "static");
  dataset_->addItem(tr("moving digits (84×84)"), "moving");
  dataset_->addItem(tr("plain MNIST (28×28)"), "mnist");
  dataset_->setToolTip(
      tr("Where the digits sit: anywhere on an 84x84 canvas (--dataset dynamic), centred on it (static), "
         "bouncing across frames (moving), or the plain 28x28 digit (mnist: use patch 7 or 14)"));
  layout_ =
      make_layout_box(this, "layout",
                      tr("How attention reads the patches: a 2-D grid (offsets dy, dx), or the patches row "
                         "by row as one sequence with 1-D offsets, causal if each patch may see only earlier "
                         "ones (the CLS token still reads them all)"));
  device_ = new QComboBox(this);
  device_->setObjectName("trainingDevice");
  device_->addItem("CPU", "cpu");
  if (cuda_available()) device_->addItem("CUDA", "cuda");
  device_->setToolTip(cuda_available() ? tr("Train on the CPU or the GPU")
                                       : tr("Train on the CPU (CUDA is not available here)"));
  form->addRow(tr("Method"), method_);
  form->addRow(tr("Preset"), preset_);
  form->addRow(tr("Depth"), depth_);
  form->addRow(tr("Patch"), patch_);
  form->addRow(tr("Layout"), layout_);
  form->addRow(tr("Dataset"), dataset_);
  form->addRow(tr("Device"), device_);
  form->addRow(tr("LoR widths"), buildLorFields());
  form->addRow(tr("First blocks"), buildHybridFields());
  return form;
}

// A hybrid: the first N blocks use another operator (e.g. Translution first, then
// RoPE or plain self-attention), N below the depth.
QHBoxLayout* TrainingPanel::buildHybridFields() {
  auto* row = new QHBoxLayout;
  first_model_ = new QComboBox(this);
  first_model_->setObjectName("firstModel");
  first_model_->addItem(tr("same as Method"), QString());
  for (const auto& c : attention_choices())
    first_model_->addItem(method_title(c.name), QString::fromStdString(c.name));
  for (int i = 1; i < first_model_->count(); ++i)
    first_model_->setItemData(i, operator_tip(attention_choices()[size_t(i - 1)]), Qt::ToolTipRole);
  first_model_->setToolTip(tr("The operator of the first blocks; the rest use Method"));
  // Sized like the other fields, not to the longest operator name.
  first_model_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  first_model_->setMinimumContentsLength(12);
  first_blocks_ = new QSpinBox(this);
  first_blocks_->setObjectName("firstBlocks");
  first_blocks_->setRange(1, 23);
  first_blocks_->setToolTip(tr("How many of the first blocks use it (fewer than the depth)"));
  auto* count = new QLabel(tr("how many"), this);
  count->setBuddy(first_blocks_);
  first_blocks_->setMaximumWidth(10 * fontMetrics().averageCharWidth());  // a count of blocks
  row->addWidget(first_model_, 1);
  row->addWidget(count);
  row->addWidget(first_blocks_);
  row->addStretch(1);
  auto follow = [this] {
    first_blocks_->setEnabled(!first_model_->currentData().toString().isEmpty());
    first_blocks_->setMaximum(std::max(1, depth_->value() - 1));
  };
  connect(first_model_, &QComboBox::currentIndexChanged, this, follow);
  connect(depth_, &QSpinBox::valueChanged, this, follow);
  follow();
  return row;
}

// LoR-Translution's low-rank widths C1 (in) and C2 (out) and its shared terms
// (ICLR Eq. 2, Appendix G); enabled while the method is a LoR one.
QHBoxLayout* TrainingPanel::buildLorFields() {
  auto* row = new QHBoxLayout;
  lor_c1_ = new QSpinBox(this);
  lor_c2_ = new QSpinBox(this);
  for (QSpinBox* box : {lor_c1_, lor_c2_}) {
    box->setRange(1, 512);
    box->setValue(8);
    box->setMaximumWidth(10 * fontMetrics().averageCharWidth());  // a width of three digits
    row->addWidget(box);
  }
  lor_c1_->setObjectName("lorC1");
  lor_c2_->setObjectName("lorC2");
  lor_c1_->setToolTip(tr("C1: the width each token is projected down to before its offset's matrix"));
  lor_c2_->setToolTip(tr("C2: the width each offset's matrix projects to, before the projection back up"));
  auto check_box = [this, row](const QString& text, const char* name, const QString& tip) {
    auto* box = new QCheckBox(text, this);
    box->setObjectName(name);
    box->setToolTip(tip);
    row->addWidget(box);
    return box;
  };
  lor_shared_ =
      check_box(tr("shared terms"), "lorShared",
                tr("Add self-attention's own q, k, v terms to the low-rank relative ones (they matter "
                   "when C1 and C2 are small)"));
  lor_shared_->setChecked(true);
  lor_value_slices_ =
      check_box(tr("sliced values"), "lorValueSlices",
                tr("With several heads, each head weights its own C2 slice of the low-rank value "
                   "before the projection back up, as the public PyTorch code does; off, each head "
                   "weights the whole value, as Eq. 2 reads"));
  auto follow_method = [this] {
    const bool lor = attention_choice(method_->currentData().toString().toStdString()).spec.method ==
                     AttentionMethod::LoRTranslution;
    for (QWidget* w : std::initializer_list<QWidget*>{lor_c1_, lor_c2_, lor_shared_, lor_value_slices_})
      w->setEnabled(lor);
  };
  row->addStretch(1);
  connect(method_, &QComboBox::currentIndexChanged, this, follow_method);
  follow_method();
  return row;
}

// The run's fields: schedule, seed, data and precision.
QFormLayout* TrainingPanel::buildRunFields() {
  auto* form2 = new QFormLayout;
  epochs_ = new QSpinBox(this);
  epochs_->setObjectName("epochs");
  epochs_->setRange(1, 1000);
  epochs_->setToolTip(tr("Passes over the training digits"));
  steps_ = new QSpinBox(this);
  steps_->setRange(0, 10000000);
  steps_->setSpecialValueText(tr("all epochs"));
  steps_->setToolTip(tr("Stop after this many optimizer steps (0: run every epoch)"));
  batch_ = new QSpinBox(this);
  batch_->setObjectName("batch");
  batch_->setRange(1, 4096);
  batch_->setValue(64);
  batch_->setToolTip(tr("Digits per optimizer step (memory grows with it)"));
  lr_ = new QDoubleSpinBox(this);
  lr_->setDecimals(5);
  lr_->setRange(1e-5, 0.1);
  lr_->setSingleStep(1e-4);
  lr_->setValue(1e-3);
  lr_->setToolTip(tr("AdamW's peak learning rate"));
  seed_ = new QSpinBox(this);
  seed_->setRange(0, 1 << 30);
  seed_->setToolTip(tr("Random seed: the same seed and settings train the same model"));
  samples_ = new QSpinBox(this);
  samples_->setRange(0, 60000);
  samples_->setSpecialValueText(tr("all 60000"));
  samples_->setToolTip(tr("Train on the first N training digits only (quick experiments)"));
  fresh_positions_ = new QCheckBox(tr("New positions every epoch"), this);
  fresh_positions_->setToolTip(
      tr("Dynamic and moving canvases: place every digit somewhere new each epoch, so "
         "no training canvas repeats (less over-fitting on long runs)"));
  fresh_positions_->setObjectName("freshPositions");
  bf16_ = new QCheckBox(tr("bfloat16 products"), this);
  bf16_->setObjectName("bf16Products");
  if (bf16_gemm_available()) {
    bf16_->setToolTip(
        tr("Multiply the dense layers and Translution's offset matrices in bfloat16 on this CPU's "
           "%1, summing in fp32 (mixed precision): self-attention and Translution train 1.5-2.5x as "
           "fast; weights, optimizer and the rest stay fp32. CPU only")
            .arg(std::string(bf16_gemm_kernel(engine_.bf16_tiles)) == "amx" ? tr("AMX tiles")
                                                                            : tr("AVX512-BF16 units")));
  } else {
    bf16_->setEnabled(false);
    bf16_->setToolTip(tr("Not here: %1").arg(QString::fromStdString(bf16_gemm_unavailable_reason())));
  }
  form2->addRow(tr("Epochs"), epochs_);
  form2->addRow(tr("Steps"), steps_);
  form2->addRow(tr("Batch"), batch_);
  form2->addRow(tr("Learning rate"), lr_);
  form2->addRow(tr("Seed"), seed_);
  form2->addRow(tr("Training digits"), samples_);
  form2->addRow(QString(), fresh_positions_);
  form2->addRow(QString(), bf16_);
  return form2;
}

// Start, pause, stop, save, resume and export, the progress bar and the status line.
// The run's controls and what to do with its model wrap into two rows on a narrow page.
QWidget* TrainingPanel::buildControls() {
  controls_ = new QWidget(this);
  auto* layout = new QVBoxLayout(controls_);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* controls = new QHBoxLayout;
  auto* results = new QHBoxLayout;
  start_ = new QPushButton(tr("Start"), this);
  pause_ = new QPushButton(tr("Pause"), this);
  stop_ = new QPushButton(tr("Stop"), this);
  save_ = new QPushButton(tr("Save…"), this);
  resume_file_ = new QPushButton(tr("Resume from file…"), this);
  export_ = new QPushButton(tr("Export curves…"), this);
  start_->setShortcut(QKeySequence("Ctrl+Return"));
  start_->setToolTip(tr("Start a new run with these settings (Ctrl+Enter)"));
  pause_->setToolTip(tr("Pause the latest run after its current step, or resume it"));
  stop_->setToolTip(tr("Stop the latest run for good (its model can still be saved or sent to a slot)"));
  save_->setToolTip(tr("Save the run as a checkpoint (pause or stop it first)"));
  resume_file_->setToolTip(
      tr("Continue a run saved as a checkpoint, from its saved step, with its saved settings"));
  export_->setToolTip(tr("Every run's curves as CSV"));
  for (QPushButton* b : {start_, pause_, stop_}) controls->addWidget(b);
  for (QPushButton* b : {save_, resume_file_}) results->addWidget(b);
  results->addWidget(buildSendButton());
  setSlots(slots_);
  results->addStretch(1);
  results->addWidget(export_);
  auto* buttons = new ReflowLayout(2);
  buttons->setColumnStretch(0, 0);  // the spare width goes before Export, at the row's end
  buttons->addLayout(controls);
  buttons->addLayout(results);
  layout->addLayout(buttons);
  progress_ = new QProgressBar(this);
  progress_->setFormat(tr("%v / %m steps"));
  progress_->setToolTip(tr("Steps of the latest run"));
  progress_->hide();  // shown from the first run on: before it, an empty bar is a blank strip
  status_ = new QLabel(tr("No run yet."), this);
  status_->setObjectName("trainingStatus");
  status_->setWordWrap(true);  // a refusal's reasons are long: they wrap instead of widening the window
  layout->addWidget(progress_);
  layout->addWidget(status_);
  return controls_;
}

void TrainingPanel::connectForm() {
  connect(start_, &QPushButton::clicked, this, &TrainingPanel::startRun);
  connect(pause_, &QPushButton::clicked, this, &TrainingPanel::togglePause);
  connect(stop_, &QPushButton::clicked, this, &TrainingPanel::stopRun);
  connect(save_, &QPushButton::clicked, this, &TrainingPanel::saveRun);
  connect(resume_file_, &QPushButton::clicked, this, &TrainingPanel::resumeFromFile);
  connect(export_, &QPushButton::clicked, this, &TrainingPanel::exportCurves);
  connect(preset_, &QComboBox::currentTextChanged, this, [this](const QString& preset) {
    depth_->setValue(int(preset_config(preset.toStdString(), "attention").depth));
  });
  // Reduced precision is bf16 on the CPU's tiles, TF32 on a GPU's tensor cores.
  connect(device_, &QComboBox::currentIndexChanged, this, [this, cpu_tip = bf16_->toolTip()] {
    const bool cpu = device_->currentData().toString() == "cpu";
    bf16_->setText(cpu ? tr("bfloat16 products") : tr("TF32 products"));
    bf16_->setToolTip(cpu_tip);
    bf16_->setEnabled(!cpu || bf16_gemm_available());
    if (!bf16_->isEnabled()) bf16_->setChecked(false);
    if (!cpu)
      bf16_->setToolTip(
          tr("Multiply in TF32 on the GPU's tensor cores (10-bit mantissa inputs, fp32 sums, as "
             "PyTorch's allow_tf32); weights, optimizer and the rest stay fp32"));
  });
}

// One button for every slot: its text names the slot a click sends to (the last
// one chosen), its arrow opens the list of slots. A tool button in
// MenuButtonPopup mode keeps the arrow apart from the text.
QToolButton* TrainingPanel::buildSendButton() {
  send_ = new QToolButton(this);
  send_->setObjectName("sendToSlot");
  send_->setPopupMode(QToolButton::MenuButtonPopup);
  send_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  send_->setMenu(new QMenu(send_));
  send_->setMinimumHeight(start_->sizeHint().height());
  send_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  return send_;
}

void TrainingPanel::setSlots(const QList<ModelSlot*>& slots) {
  slots_ = slots;
  const QString chosen = send_->defaultAction() ? send_->defaultAction()->data().toString() : QString();
  QMenu* menu = send_->menu();
  send_->setDefaultAction(nullptr);
  qDeleteAll(menu->actions());
  for (ModelSlot* slot : slots_) {
    QAction* action = menu->addAction(tr("To slot %1").arg(slot->name()));
    action->setData(slot->name());
    action->setToolTip(
        tr("Show this model in comparison slot %1 (pause or stop the run first); the arrow picks "
           "another slot")
            .arg(slot->name()));
    connect(action, &QAction::triggered, this, [this, slot, action] {
      send_->setDefaultAction(action);  // the next click goes to the same slot
      sendToSlot(slot);
    });
    if (slot->name() == chosen || !send_->defaultAction()) send_->setDefaultAction(action);
  }
  if (start_) updateButtons();
}

ViTConfig TrainingPanel::modelConfig() const {
  ViTConfig c =
      preset_config(preset_->currentText().toStdString(), method_->currentData().toString().toStdString());
  const bool mnist = dataset_->currentData().toString() == "mnist";
  c.image_height = c.image_width = mnist ? 28 : 84;
  c.patch = patch_->currentData().toInt();
  c.depth = depth_->value();
  c.layout = layout_->currentData().toString().toStdString();
  c.lor_c1 = lor_c1_->value();
  c.lor_c2 = lor_c2_->value();
  c.lor_shared = lor_shared_->isChecked();
  c.lor_value_slices = lor_value_slices_->isChecked();
  c.first_model = first_model_->currentData().toString().toStdString();
  c.first_blocks = c.first_model.empty() ? 0 : first_blocks_->value();
  c.validate();
  return c;
}

TrainConfig TrainingPanel::trainConfig() const {
  TrainConfig t;
  t.dataset = dataset_->currentData().toString().toStdString();
  t.epochs = epochs_->value();
  t.steps = steps_->value();
  t.batch = batch_->value();
  t.lr = lr_->value();
  t.seed = seed_->value();
  t.train_samples = samples_->value();
  t.fresh_positions = fresh_positions_->isChecked();
  const bool cpu = device_->currentData().toString() == "cpu";
  t.precision = !bf16_->isChecked() ? "fp32" : cpu ? "bf16" : "tf32";
  t.eval_samples = 1000;
  t.eval_every = t.steps > 0 ? std::max<int64_t>(1, t.steps / 10) : 0;
  t.validate();
  return t;
}

void TrainingPanel::setQuickRun(int64_t steps, int64_t train_samples) {
  steps_->setValue(int(steps));
  samples_->setValue(int(train_samples));
}

MemoryCheck TrainingPanel::memoryCheck() const {
  MemoryPlan plan;
  plan.config = modelConfig();
  plan.engine = engine_;
  plan.training = true;
  plan.batch = batch_->value();
  plan.eval_batch = std::max<int64_t>(plan.batch, 64);  // the trainer's held-out evaluation
  plan.extra_bytes = kMnistBytes;
  plan.extra_what = "the digits";
  plan.batch_option = "batch";
  plan.model_option = "method";
  return check_memory(plan, parse_device(device_->currentData().toString().toStdString()));
}

// The label under the form follows every choice that changes the model, the batch or the device.
void TrainingPanel::watchMemory() {
  memory_->setObjectName("memoryEstimate");
  memory_->setWordWrap(true);
  memory_->setToolTip(
      tr("The run's estimated peak memory (weights, gradients, AdamW's moments, activations) "
         "against what the machine has available now; `translution model info` prints the parts"));
  for (QComboBox* c : {method_, preset_, patch_, layout_, dataset_, device_, first_model_})
    connect(c, &QComboBox::currentIndexChanged, this, &TrainingPanel::updateMemory);
  for (QSpinBox* b : {depth_, batch_, lor_c1_, lor_c2_, first_blocks_})
    connect(b, &QSpinBox::valueChanged, this, &TrainingPanel::updateMemory);
  connect(lor_shared_, &QCheckBox::toggled, this, &TrainingPanel::updateMemory);
  updateMemory();
}

void TrainingPanel::showMemory(const MemoryCheck& check) {
  memory_->setText(check.fits
                       ? tr("Memory: %1").arg(QString::fromStdString(check.summary))
                       : tr("Memory: %1; this run will not fit").arg(QString::fromStdString(check.summary)));
  memory_->setStyleSheet(check.fits ? QString() : QString("color: #b00000"));
}

void TrainingPanel::updateMemory() {
  try {
    showMemory(memoryCheck());
  } catch (const std::exception& e) {  // an impossible choice (a patch that does not divide the image)
    memory_->setText(tr("Memory: no estimate (%1)").arg(QString::fromStdString(e.what())));
    memory_->setStyleSheet(QString());
  }
}

bool TrainingPanel::confirmMemory(const MemoryCheck& check) {
  if (check.fits) return true;
  const QString why = QString::fromStdString(check.refusal);
  status_->setText(tr("Not started: %1").arg(why));
  if (qEnvironmentVariableIsSet("TRANSLUTION_NO_DIALOGS")) return false;
  QMessageBox box(QMessageBox::Warning, tr("Not enough memory for this run"), why + "\n", QMessageBox::Cancel,
                  this);
  QPushButton* start = box.addButton(tr("Start"), QMessageBox::AcceptRole);
  auto* anyway = new QCheckBox(tr("Run anyway (may exhaust memory)"));
  start->setEnabled(false);
  connect(anyway, &QCheckBox::toggled, start, &QPushButton::setEnabled);
  box.setCheckBox(anyway);
  box.setDefaultButton(QMessageBox::Cancel);
  box.exec();
  return box.clickedButton() == start && anyway->isChecked();
}

void TrainingPanel::startRun() {
  if (current() && current()->running()) return;
  try {
    const ViTConfig model = modelConfig();
    const TrainConfig train = trainConfig();
    const MemoryCheck check = memoryCheck();  // what is available changes between choices
    showMemory(check);
    if (!confirmMemory(check)) return;
    addRun(new TrainingRun(engine_, model, train, data_dir_, device_->currentData().toString(), this));
  } catch (const std::exception& e) {
    showError(tr("Cannot start the run"), QString::fromStdString(e.what()));
  }
}

void TrainingPanel::resumeFromFile() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Resume a run"), QString(), tr("Checkpoints (*.ckpt)"));
  if (path.isEmpty()) return;
  try {
    const std::string device = device_->currentData().toString().toStdString();
    if (const std::optional<CheckpointPeek> peek = peek_checkpoint(path.toStdString());
        peek && peek->training) {
      MemoryPlan plan = checkpoint_plan(*peek, peek->training->batch);
      plan.engine = engine_;
      plan.training = true;
      plan.eval_batch = std::max<int64_t>(plan.batch, 64);
      plan.extra_bytes = kMnistBytes;
      plan.extra_what = "the digits";
      if (!confirmMemory(check_memory(plan, parse_device(device)))) return;
    }
    Checkpoint checkpoint = load_checkpoint(path.toStdString(), parse_device(device));
    // A run trained in bf16 continues in fp32 where bf16 cannot run (no bfloat16 kernel, or not the CPU),
    // one in tf32 where TF32 cannot (the CPU).
    QString note;
    if (checkpoint.training && checkpoint.training->config.precision == "tf32" && device == "cpu") {
      checkpoint.training->config.precision = "fp32";
      note = tr("%1 trained in TF32; it continues in fp32 on the CPU.").arg(QFileInfo(path).fileName());
    }
    if (checkpoint.training && checkpoint.training->config.precision == "bf16" &&
        (device != "cpu" || !bf16_gemm_available())) {
      checkpoint.training->config.precision = "fp32";
      const QString why = device != "cpu" ? tr("the chosen device is not the CPU")
                                          : QString::fromStdString(bf16_gemm_unavailable_reason());
      note = tr("%1 trained in bf16; it continues in fp32 here (%2).").arg(QFileInfo(path).fileName(), why);
    }
    addRun(
        new TrainingRun(engine_, std::move(checkpoint), data_dir_, device_->currentData().toString(), this));
    if (!note.isEmpty()) status_->setText(note);
  } catch (const std::exception& e) {
    showError(tr("Cannot resume %1").arg(path), QString::fromStdString(e.what()));
  }
}

void TrainingPanel::addRun(TrainingRun* run) {
  progress_->setRange(0, int(run->trainer().total_steps()));
  progress_->setValue(int(run->trainer().step()));
  progress_->show();
  const QColor colour = kRunColours[runs_.size() % 8];
  const QString n = QString::number(runs_.size() + 1);
  const QString name = tr("%1. %2").arg(n, run->shortName());
  Series s{run, add_graph(loss_plot_, colour, false, name),
           add_graph(loss_plot_, colour, true, tr("%1: test").arg(name)),
           add_graph(accuracy_plot_, colour, false, name),
           add_graph(accuracy_plot_, colour, true, tr("%1: test").arg(name))};
  // One entry per run, beneath the curves (the x axis says which line is which).
  s.test_loss->removeFromLegend();
  s.test_accuracy->removeFromLegend();
  show_legend_beneath(loss_plot_);
  show_legend_beneath(accuracy_plot_);
  for (QCPGraph* g : {s.train_loss, s.test_loss, s.train_accuracy, s.test_accuracy})
    g->setProperty("label", run->label());
  // A resumed run starts with its saved curves.
  for (const CurvePoint& c : run->trainer().history()) {
    s.train_loss->addData(c.epoch, c.loss);
    s.train_accuracy->addData(c.epoch, c.accuracy);
    if (!std::isnan(c.test_accuracy)) {
      s.test_loss->addData(c.epoch, c.test_loss);
      s.test_accuracy->addData(c.epoch, c.test_accuracy);
    }
  }
  runs_ << s;
  connect(run, &TrainingRun::progress, this, &TrainingPanel::onProgress);
  connect(run, &TrainingRun::failed, this,
          [this](const QString& message) { showError(tr("The run stopped"), message); });
  connect(run, &TrainingRun::finished, this, [this](int event) {
    updateButtons();
    Q_EMIT runFinished(event);
  });
  status_->setText(tr("Run %1: %2").arg(n, run->label()));
  run->start();
  updateButtons();
}

void TrainingPanel::onProgress(const TrainProgress& p) {
  auto* run = qobject_cast<TrainingRun*>(sender());
  Series* s = nullptr;
  for (Series& r : runs_)
    if (r.run == run) s = &r;
  if (!s) return;
  using E = TrainProgress::Event;
  switch (p.event) {
    case E::Step: {
      // Curves get the trainer's 10-step means; the bar and status every step.
      const auto& history = run->trainer().history();
      if (!history.empty() && history.back().step == p.step) {
        s->train_loss->addData(history.back().epoch, history.back().loss);
        s->train_accuracy->addData(history.back().epoch, history.back().accuracy);
      }
      progress_->setRange(0, int(p.total_steps));
      progress_->setValue(int(p.step));
      status_->setText(tr("step %1 of %2 · epoch %3 · loss %4 · accuracy %5% · %6 images/s · ETA %7 s")
                           .arg(p.step)
                           .arg(p.total_steps)
                           .arg(p.epoch, 0, 'f', 2)
                           .arg(p.loss, 0, 'f', 3)
                           .arg(100 * p.accuracy, 0, 'f', 1)
                           .arg(p.images_per_second, 0, 'f', 0)
                           .arg(p.eta_seconds, 0, 'f', 0));
      break;
    }
    case E::Evaluated:
      s->test_loss->addData(p.epoch, p.test_loss);
      s->test_accuracy->addData(p.epoch, p.test_accuracy);
      break;
    case E::Diverged:
      showError(tr("The run diverged"),
                QString::fromStdString(p.message) +
                    tr("\nLower the learning rate or turn clipping on, then start again."));
      break;
    case E::Paused:
    case E::Resumed:
    case E::Finished:
    case E::Stopped:
      status_->setText(status_->text() + (p.event == E::Paused     ? tr(" · paused")
                                          : p.event == E::Finished ? tr(" · finished")
                                          : p.event == E::Stopped  ? tr(" · stopped")
                                                                   : QString()));
      updateButtons();
      break;
    default: break;
  }
  loss_plot_->rescaleAxes();
  accuracy_plot_->xAxis->setRange(loss_plot_->xAxis->range());
  loss_plot_->replot(QCustomPlot::rpQueuedReplot);
  accuracy_plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TrainingPanel::togglePause() {
  TrainingRun* run = current();
  if (!run || !run->running()) return;
  if (run->paused())
    run->resume();
  else
    run->pause();
  pause_->setText(run->paused() ? tr("Resume") : tr("Pause"));
}

void TrainingPanel::stopRun() {
  if (TrainingRun* run = current()) run->stop();
}

void TrainingPanel::saveRun() {
  TrainingRun* run = current();
  if (!run) return;
  if (!run->idle()) {
    showError(tr("Cannot save yet"),
              tr("Pause or stop the run first, so the weights hold still while they are written."));
    return;
  }
  QSettings settings;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save the run"), settings.value("training/lastDir").toString(), tr("Checkpoints (*.ckpt)"));
  if (path.isEmpty()) return;
  settings.setValue("training/lastDir", QFileInfo(path).absolutePath());
  try {
    run->save(path);
    status_->setText(status_->text() + tr(" · saved %1").arg(QFileInfo(path).fileName()));
  } catch (const std::exception& e) {
    showError(tr("Cannot save %1").arg(path), QString::fromStdString(e.what()));
  }
}

void TrainingPanel::sendToSlot(ModelSlot* slot) {
  TrainingRun* run = current();
  if (!run) return;
  try {
    auto predictor =
        std::make_shared<const Predictor>(slot->engine(), run->snapshot(), run->label().toStdString(),
                                          parse_device(slot->device().toStdString()));
    if (const QString why = slot->setPredictor(
            predictor, run->label(), tr("A model sent from the Training tab (Save… there keeps it)"));
        !why.isEmpty())
      showError(tr("Cannot send the model"), why);
  } catch (const std::exception& e) {
    showError(tr("Cannot send the model"), QString::fromStdString(e.what()));
  }
}

void TrainingPanel::exportCurves() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export curves"), QString(), tr("CSV (*.csv)"));
  if (!path.isEmpty()) exportCurvesTo(path);
}

QString TrainingPanel::exportCurvesTo(const QString& path) {
  auto refuse = [this](const QString& why) {
    showError(tr("Cannot export the curves"), why);
    return why;
  };
  QString target;
  try {
    target = QString::fromStdString(checked_output_path(path.toStdString()));  // a symlink's target
  } catch (const std::exception& e) {  // one line: the path and what is wrong with it
    return refuse(QString::fromStdString(e.what()));
  }
  QSaveFile file(target);
  if (!file.open(QIODevice::WriteOnly))
    return refuse(tr("cannot write %1: %2").arg(target, file.errorString()));
  QTextStream out(&file);
  out << "run,label,step,epoch,loss,accuracy,lr,test_loss,test_accuracy\n";
  for (int i = 0; i < runs_.size(); ++i)
    for (const CurvePoint& c : runs_[i].run->trainer().history())
      out << i + 1 << ",\"" << runs_[i].run->label() << "\"," << c.step << "," << c.epoch << "," << c.loss
          << "," << c.accuracy << "," << c.lr << "," << c.test_loss << "," << c.test_accuracy << "\n";
  out.flush();
  if (!file.commit()) return refuse(tr("cannot write %1: %2").arg(target, file.errorString()));
  status_->setText(tr("Curves of %n run(s) written to %1", nullptr, int(runs_.size())).arg(target));
  return {};
}

bool TrainingPanel::hasUnsavedRun() const {
  for (const Series& s : runs_)
    if (!s.run->saved() && s.run->trainer().step() > 0) return true;
  return false;
}

void TrainingPanel::updateButtons() {
  TrainingRun* run = current();
  const bool running = run && run->running();
  start_->setEnabled(!running);
  pause_->setEnabled(running);
  pause_->setText(running && run->paused() ? tr("Resume") : tr("Pause"));
  stop_->setEnabled(running);
  save_->setEnabled(run != nullptr);
  for (QAction* a : send_->menu()->actions()) a->setEnabled(run != nullptr);
  send_->setEnabled(run != nullptr);
  export_->setEnabled(run != nullptr);
}

void TrainingPanel::showError(const QString& what, const QString& message) {
  status_->setText(what + ": " + message);
  if (!qEnvironmentVariableIsSet("TRANSLUTION_NO_DIALOGS")) QMessageBox::warning(this, what, message);
}

}  // namespace translution::ui
