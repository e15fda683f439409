#include "slot_view.h"

#include <ATen/ATen.h>
#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "model_picker.h"
#include "model_variant.h"
#include "model_slot.h"
#include "probability_chart.h"
#include "util/device.h"

namespace translution::ui {

SlotView::SlotView(ModelSlot* slot, QWidget* parent)
    : QWidget(parent),
      slot_(slot),
      title_(new QLabel(this)),
      details_(new QLabel(this)),
      predicted_(new QLabel("–", this)),
      confidence_(new QLabel(this)),
      timing_(new QLabel(this)),
      device_(new QComboBox(this)),
      picker_(new ModelPicker(slot, this)),
      remove_(new QPushButton(QStringLiteral("✕"), this)),
      chart_(new ProbabilityChart(this)) {
  QFont big = predicted_->font();
  big.setPointSizeF(big.pointSizeF() * 3);
  big.setBold(true);
  predicted_->setFont(big);
  predicted_->setMinimumWidth(60);
  predicted_->setAlignment(Qt::AlignCenter);
  predicted_->setToolTip(tr("Predicted class"));
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  details_->setWordWrap(true);
  timing_->setToolTip(tr("Time of the last forward pass (with attention maps)"));
  device_->addItem("CPU", "cpu");
  if (cuda_available()) device_->addItem("CUDA", "cuda");
  device_->setEnabled(device_->count() > 1);
  device_->setToolTip(cuda_available() ? tr("Run this slot on the CPU or the GPU")
                                       : tr("CUDA is not available (this LibTorch has no CUDA or there is no GPU)"));
  remove_->setToolTip(tr("Remove slot %1").arg(slot->name()));
  remove_->setFixedWidth(remove_->sizeHint().height());
  remove_->setObjectName("removeSlot");

  auto* header = new QHBoxLayout;
  header->addWidget(title_, 1);
  header->addWidget(device_);
  header->addWidget(remove_);
  auto* result = new QHBoxLayout;
  result->addWidget(predicted_);
  auto* side = new QVBoxLayout;
  side->addWidget(confidence_);
  side->addWidget(timing_);
  result->addLayout(side, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(header);
  layout->addWidget(picker_);
  layout->addWidget(details_);
  layout->addLayout(result);
  layout->addWidget(chart_, 1);

  connect(picker_, &ModelPicker::openFileRequested, this, [this] { Q_EMIT loadRequested(slot_); });
  connect(remove_, &QPushButton::clicked, this, [this] { Q_EMIT removeRequested(slot_); });
  connect(device_, &QComboBox::activated, this, [this] {
    if (!slot_->source().isEmpty()) slot_->load(slot_->source(), device_->currentData().toString());
  });
  connect(slot_, &ModelSlot::loadStarted, this, [this](const QString& source) {
    details_->setText(tr("Loading %1…").arg(QFileInfo(source).fileName()));
  });
  connect(slot_, &ModelSlot::loaded, this, &SlotView::showModel);
  connect(slot_, &ModelSlot::predicted, this, &SlotView::showPrediction);
  connect(slot_, &ModelSlot::failed, this, &SlotView::showError);
  showModel();
}

void SlotView::setRemovable(bool removable) { remove_->setVisible(removable); }

void SlotView::showModel() {
  const auto p = slot_->predictor();
  if (!p) {
    title_->setText(tr("Slot %1: empty").arg(slot_->name()));
    details_->setText(tr("Load a checkpoint (translution train writes them)."));
    return;
  }
  const ViTConfig& c = p->config();
  title_->setText(tr("Slot %1: %2").arg(slot_->name(), QString::fromStdString(c.model)));
  QString text = tr("ViT-%1/%2, depth %3, dim %4, %5 M parameters, %6")
                     .arg(QString::fromStdString(c.preset))
                     .arg(c.patch)
                     .arg(c.depth)
                     .arg(c.dim)
                     .arg(double(p->parameter_count()) / 1e6, 0, 'f', 2)
                     .arg(p->device().is_cuda() ? "CUDA" : "CPU");
  const auto& meta = p->metadata();
  if (meta.count("dataset")) text += tr(" · trained on %1").arg(QString::fromStdString(meta.at("dataset")));
  if (meta.count("test_accuracy"))
    text += tr(" · test accuracy %1%").arg(100 * std::stod(meta.at("test_accuracy")), 0, 'f', 1);
  if (const QString variant = model_variant(c); !variant.isEmpty()) text += " · " + variant;
  details_->setText(text);
  details_->setToolTip(QString::fromStdString(p->source()));
  device_->setCurrentIndex(std::max(0, device_->findData(slot_->device())));
}

void SlotView::showPrediction() {
  const auto& p = slot_->lastPrediction();
  if (!p) return;
  // A model answers even for no ink at all, often confidently; shown as a prediction, that reads as if the
  // blank canvas held a digit.
  const bool blank = p->canvas.defined() && !p->canvas.gt(0).any().item<bool>();
  predicted_->setText(blank ? QStringLiteral("–") : QString::number(p->predicted));
  confidence_->setText(blank ? tr("blank canvas: nothing to classify")
                             : tr("%1% sure").arg(100 * p->probabilities[size_t(p->predicted)], 0, 'f', 1));
  timing_->setText(tr("%1 ms").arg(p->milliseconds, 0, 'f', p->milliseconds < 10 ? 2 : 1));
  // On a GPU, whether the forward replays a CUDA graph (infer/graphed_forward.h) or why not.
  if (const auto predictor = slot_->predictor())
    timing_->setToolTip(tr("Forward and copy back: %1").arg(QString::fromStdString(predictor->graph_state())));
  chart_->setProbabilities(p->probabilities, blank ? -1 : int(p->predicted));
}

void SlotView::showError(const QString& message) {
  details_->setText(tr("⚠ %1").arg(message));
  details_->setToolTip(message);
}

QString SlotView::predictionText() const { return predicted_->text(); }

QString SlotView::confidenceText() const { return confidence_->text(); }

}  // namespace translution::ui
