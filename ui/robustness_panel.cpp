#include "robustness_panel.h"

#include <algorithm>

#include <QResizeEvent>
#include <QScrollArea>
#include <QSplitter>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include "move_panel.h"
#include "protocol_box.h"
#include "protocol_table.h"
#include "scrolling_page.h"
#include "shift_metrics_panel.h"
#include "sweep_panel.h"

namespace translution::ui {
RobustnessPanel::RobustnessPanel(const EngineOptions& engine, QString data_dir,
                                 const QList<ModelSlot*>& slots, DigitCanvas* canvas, TestDigitSource* digits,
                                 QWidget* parent)
    : QWidget(parent),
      move_(new MovePanel(slots, canvas, digits, this)),
      protocol_(new ProtocolBox(engine, data_dir, this)),
      sweep_(new SweepPanel(data_dir, slots, this)),
      shift_(new ShiftMetricsPanel(data_dir, slots, this)),
      beneath_(new QTabWidget(this)),
      splitter_(new QSplitter(Qt::Vertical, this)) {
  protocol_->setTitle(tr("Train on centred digits (S) or anywhere (D), test on either"));
  move_page_ = scrolling_page(move_, this);
  protocol_page_ = scrolling_page(protocol_, beneath_);
  sweep_page_ = scrolling_page(sweep_, beneath_);
  shift_page_ = scrolling_page(shift_, beneath_);
  beneath_->addTab(protocol_page_, tr("Protocol: S→S, D→D, S→D"));
  beneath_->addTab(sweep_page_, tr("Translation sweep"));
  beneath_->addTab(shift_page_, tr("Shift metrics"));
  beneath_->setTabToolTip(
      0, tr("Accuracy of models trained on centred (S) or moved (D) digits, tested on either"));
  beneath_->setTabToolTip(
      1, tr("Accuracy with the test digits' centre at every canvas position, one map per slot"));
  beneath_->setTabToolTip(
      2, tr("How often a moved digit keeps its class, the worst case over positions, and how "
            "closely each layer's tokens follow a one-patch move"));
  splitter_->setObjectName("robustnessSplitter");
  // The demo scrolls down where the splitter leaves it less height than its story needs.
  splitter_->addWidget(move_page_);
  splitter_->addWidget(beneath_);
  splitter_->setStretchFactor(0, 3);  // the demo's plot and story get the larger share
  splitter_->setStretchFactor(1, 2);
  splitter_->setChildrenCollapsible(false);
  connect(splitter_, &QSplitter::splitterMoved, this, [this] { split_by_user_ = true; });
  connect(beneath_, &QTabWidget::currentChanged, this, &RobustnessPanel::fitSplit);
  for (QWidget* page : {static_cast<QWidget*>(move_), static_cast<QWidget*>(protocol_),
                        static_cast<QWidget*>(sweep_), static_cast<QWidget*>(shift_)})
    page->installEventFilter(this);  // a page that asks for another height (rows come in) is fitted again
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(splitter_);

  connect(move_, &MovePanel::slid, this, &RobustnessPanel::slid);
  connect(move_, &MovePanel::demoStarted, this, [this] {
    if (!compact()) beneath_->setCurrentWidget(protocol_page_);  // compact, the slide stays in view
    if (protocol_->table()->rowOf(ProtocolBox::pairName("translution", true)) < 0)
      protocol_->evaluateBundledPairs();
  });
  connect(sweep_, &SweepPanel::passShown, this, &RobustnessPanel::sweepPassShown);
  connect(protocol_, &ProtocolBox::sweepReady, this, [this](const QString& title, const SweepResult& r) {
    sweep_->showSweep(title, r, 12, QColor());  // the experiment's tiny ViTs use 12 px patches
  });
  setSlots(slots);
}

QCustomPlot* RobustnessPanel::movePlot() const { return move_->movePlot(); }

SweepMaps* RobustnessPanel::sweepMaps() const { return sweep_->sweepMaps(); }

ProtocolTable* RobustnessPanel::protocolTable() const { return protocol_->table(); }

bool RobustnessPanel::busy() const {
  return move_->busy() || sweep_->busy() || protocol_->busy() || shift_->busy();
}

int RobustnessPanel::trueClass() const { return move_->trueClass(); }

void RobustnessPanel::setSlots(const QList<ModelSlot*>& slots) {
  move_->setSlots(slots);
  sweep_->setSlots(slots);
  protocol_->setSlots(slots);
  shift_->setSlots(slots);
}

void RobustnessPanel::slideAcross() { move_->slideAcross(); }

void RobustnessPanel::runSweep() {
  beneath_->setCurrentWidget(sweep_page_);
  sweep_->runSweep();
}

void RobustnessPanel::measureShiftMetrics() {
  beneath_->setCurrentWidget(shift_page_);
  shift_->measure();
}

void RobustnessPanel::showCentredPair() { move_->showCentredPair(); }

bool RobustnessPanel::compact() const { return beneath_->indexOf(move_page_) >= 0; }

// Below kCompactHeight the demo above and the tabs beneath would each get a sliver, each
// scrolling on its own: the demo becomes the first tab instead, and each page has the height.
void RobustnessPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const bool want = height() < kCompactHeight;
  if (want != compact()) setCompact(want);
  fitSplit();
}

void RobustnessPanel::setCompact(bool want) {
  if (want) {
    beneath_->insertTab(0, move_page_, tr("Move along a path"));
    beneath_->setTabToolTip(0, tr("The digit slid along a path: each slot's probability of the true "
                                  "class against the position"));
    beneath_->setCurrentIndex(0);
  } else {
    const bool showing_move = beneath_->currentWidget() == move_page_;
    beneath_->removeTab(beneath_->indexOf(move_page_));
    splitter_->insertWidget(0, move_page_);
    move_page_->show();
    splitter_->setStretchFactor(0, 3);
    splitter_->setStretchFactor(1, 2);
    if (showing_move) beneath_->setCurrentWidget(protocol_page_);
  }
}

namespace {

// The height `page`'s contents need at its width: their parts stack on a narrow page (a
// ReflowLayout), which their size hint, taken side by side, does not count.
int page_height(const QScrollArea& page) {
  const QWidget* w = page.widget();
  return w->hasHeightForWidth() ? w->heightForWidth(page.viewport()->width()) : w->sizeHint().height();
}

}  // namespace

bool RobustnessPanel::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::LayoutRequest) fitSplit();
  return QWidget::eventFilter(watched, event);
}

// The splitter's stretch factors alone would give the demo's plot three fifths of a tall
// screen and leave the protocol page scrolling by a row: where both fit, the page's own
// height comes first.
void RobustnessPanel::fitSplit() {
  if (compact() || split_by_user_ || splitter_->count() < 2) return;
  const auto* page = qobject_cast<QScrollArea*>(beneath_->currentWidget());
  if (!page || !page->widget()) return;
  const int total = splitter_->height() - splitter_->handleWidth();
  if (total <= 0) return;
  // The tab bar and the pane's frame: measured where the tabs are laid out, else estimated.
  const int frame = 2 * beneath_->style()->pixelMetric(QStyle::PM_DefaultFrameWidth, nullptr, beneath_);
  const int around = beneath_->isVisible() && page->height() > 0
                         ? beneath_->height() - page->height()
                         : beneath_->tabBar()->sizeHint().height() + frame;
  const int below = around + page_height(*page);
  const int above = page_height(*move_page_);
  // Where both do not fit, the demo (the story) keeps what it asks for, up to three fifths.
  const int given = above + below <= total ? below : total - std::min(above, total * 3 / 5);
  splitter_->setSizes({total - given, given});
}

}  // namespace translution::ui
