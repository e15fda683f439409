#include "slot_view.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <QComboBox>
#include <QEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "elided_label.h"
#include "method_titles.h"
#include "model_picker.h"
#include "model_slot.h"
#include "model_variant.h"
#include "probability_chart.h"
#include "util/device.h"

namespace translution::ui {
namespace {

// A checkpoint's dataset in the words the toolbar and the model picker use.
QString dataset_words(const std::string& dataset) {
  if (dataset == "static") return QObject::tr("centred digits");
  if (dataset == "dynamic") return QObject::tr("digits anywhere");
  if (dataset == "moving") return QObject::tr("moving digits");
  if (dataset == "mnist") return QObject::tr("28 x 28 MNIST");
  return QString::fromStdString(dataset);
}

}  // namespace

SlotView::SlotView(ModelSlot* slot, QWidget* parent)
    : QWidget(parent),
      slot_(slot),
      title_(new ElidedLabel(this)),
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
  predicted_->setMinimumWidth(predicted_->fontMetrics().horizontalAdvance("8") * 2);
  predicted_->setAlignment(Qt::AlignCenter);
  predicted_->setToolTip(tr("Predicted class"));
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  details_->setWordWrap(true);
  details_->setObjectName("slotDetails");
  setDetailsHeight(0);
  details_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  details_->installEventFilter(this);
  confidence_->setWordWrap(true);
  timing_->setToolTip(tr("Time of the last forward pass (with attention maps)"));
  // As wide as a usual time, whatever the last one was: the slot's minimum width does not follow the clock.
  timing_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  timing_->setMinimumWidth(timing_->fontMetrics().horizontalAdvance(QStringLiteral("00.00 ms")));
  device_->addItem("CPU", "cpu");
  if (cuda_available()) device_->addItem("CUDA", "cuda");
  // Without a GPU there is nothing to choose: the box would only take the title's room
  // (the details line says where the slot runs).
  device_->setVisible(device_->count() > 1);
  device_->setToolTip(tr("Run this slot on the CPU or the GPU"));
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
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(header);
  layout->addWidget(picker_);
  layout->addWidget(details_);
  layout->addLayout(result);
  layout->addWidget(chart_, 1);
  setTabOrder(picker_, device_);
  setTabOrder(device_, remove_);

  connect(picker_, &ModelPicker::openFileRequested, this, [this] { Q_EMIT loadRequested(slot_); });
  connect(remove_, &QPushButton::clicked, this, [this] { Q_EMIT removeRequested(slot_); });
  connect(device_, &QComboBox::activated, this, [this] {
    if (!slot_->source().isEmpty()) slot_->load(slot_->source(), device_->currentData().toString());
  });
  connect(slot_, &ModelSlot::loadStarted, this, [this](const QString& source) {
    details_->setText(tr("Loading %1…").arg(QFileInfo(source).fileName()));
    Q_EMIT detailsChanged();
  });
  connect(slot_, &ModelSlot::loaded, this, &SlotView::showModel);
  connect(slot_, &ModelSlot::predicted, this, &SlotView::showPrediction);
  connect(slot_, &ModelSlot::failed, this, &SlotView::showError);
  showModel();
}

void SlotView::setRemovable(bool removable) {
  remove_->setVisible(removable);
  // The slot's minimum width follows at once, even while another tab is shown (a hidden
  // slot's layouts would otherwise keep the button's width until the slot is shown).
  for (QLayout* row : findChildren<QLayout*>()) row->invalidate();
  updateGeometry();
}

QList<QWidget*> SlotView::focusOrder() const { return {picker_, device_, remove_}; }

// The text's own height at the label's width. Not QLabel::heightForWidth: that never
// reports less than the minimum height setDetailsHeight gave the label, so a need that
// shrank (wider slots, two by two) would keep the height of the narrower layout.
int SlotView::detailsNeed() const {
  const QRect text = details_->fontMetrics().boundingRect(
      QRect(0, 0, std::max(1, details_->contentsRect().width()), 1 << 20), Qt::TextWordWrap,
      details_->text());
  const QMargins m = details_->contentsMargins();
  return text.height() + m.top() + m.bottom();
}

// At least three lines, whatever the text needs, so that a slot's chart does not jump
// when a model with shorter details is loaded into it.
void SlotView::setDetailsHeight(int height) {
  const int least = std::max(height, 3 * details_->fontMetrics().lineSpacing());
  if (details_->minimumHeight() != least) details_->setMinimumHeight(least);
}

bool SlotView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == details_ && event->type() == QEvent::Resize) Q_EMIT detailsChanged();
  return QWidget::eventFilter(watched, event);
}

void SlotView::showModel() {
  clearPrediction();  // the bars belonged to the previous model; the new one predicts the canvas next
  const auto p = slot_->predictor();
  if (!p) {
    title_->setFullText(tr("%1: empty").arg(slot_->name()));
    title_->setKeptEnd(QString());
    details_->setText(
        tr("No model yet: choose one in the picker above, or a checkpoint file (Open file… at the "
           "picker's end)."));
    details_->setToolTip(QString());
    Q_EMIT detailsChanged();
    return;
  }
  const ViTConfig& c = p->config();
  // "A: Translution (D)" in every slot alike (a "Slot" that fits in one header and not in the
  // next would set them apart), the mark that tells two models of one method apart kept whole.
  const QString meaning = trained_mark_meaning(p->metadata());
  title_->setFullText(tr("%1: %2").arg(slot_->name(), model_title(c.model, p->metadata())),
                      (meaning.isEmpty() ? QString() : meaning + "\n") + QString::fromStdString(p->source()));
  title_->setKeptEnd(trained_mark(p->metadata()));
  QString text = tr("ViT-%1/%2, depth\u00a0%3, dim\u00a0%4, %5\u00a0M\u00a0parameters, %6")
                     .arg(QString::fromStdString(c.preset))
                     .arg(c.patch)
                     .arg(c.depth)
                     .arg(c.dim)
                     .arg(double(p->parameter_count()) / 1e6, 0, 'f', 2)
                     .arg(p->device().is_cuda() ? "CUDA" : "CPU");
  const auto& meta = p->metadata();
  if (meta.count("dataset")) text += tr(" · trained on %1").arg(dataset_words(meta.at("dataset")));
  if (meta.count("test_accuracy"))
    text += tr(" · test\u00a0accuracy\u00a0%1%").arg(100 * std::stod(meta.at("test_accuracy")), 0, 'f', 1);
  if (const QString variant = model_variant(c); !variant.isEmpty()) text += " · " + variant;
  details_->setText(text);
  details_->setToolTip(QString::fromStdString(p->source()));
  Q_EMIT detailsChanged();
  device_->setCurrentIndex(std::max(0, device_->findData(slot_->device())));
}

void SlotView::clearPrediction() {
  predicted_->setText(QStringLiteral("–"));
  confidence_->clear();
  timing_->clear();
  chart_->clearProbabilities();
}

void SlotView::showBlankCanvas() {
  predicted_->setText(QStringLiteral("–"));
  confidence_->setText(slot_->predictor() ? tr("Blank canvas: nothing to classify") : QString());
  chart_->clearProbabilities();
}

void SlotView::showPrediction() {
  const auto& p = slot_->lastPrediction();
  if (!p) return;
  timing_->setText(tr("%1 ms").arg(p->milliseconds, 0, 'f', p->milliseconds < 10 ? 2 : 1));
  // On a GPU, whether the forward replays a CUDA graph (infer/graphed_forward.h) or why not.
  if (const auto predictor = slot_->predictor())
    timing_->setToolTip(
        tr("Forward and copy back: %1").arg(QString::fromStdString(predictor->graph_state())));
  // A model answers even for no ink at all, often confidently; shown, that reads as if the blank canvas held
  // a digit.
  if (blank_canvas(p->canvas)) return showBlankCanvas();
  predicted_->setText(QString::number(p->predicted));
  confidence_->setText(tr("%1% sure").arg(100 * p->probabilities[size_t(p->predicted)], 0, 'f', 1));
  chart_->setProbabilities(p->probabilities, int(p->predicted));
}

void SlotView::showError(const QString& message) {
  details_->setText(tr("⚠ %1").arg(message));
  details_->setToolTip(message);
  Q_EMIT detailsChanged();
}

QString SlotView::titleText() const { return title_->fullText(); }

QString SlotView::detailsText() const { return details_->text(); }

QString SlotView::predictionText() const { return predicted_->text(); }

QString SlotView::confidenceText() const { return confidence_->text(); }

}  // namespace translution::ui
