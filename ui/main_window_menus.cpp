// The main window's menu bar: File (images, checkpoints, pictures, quit), View
// (tabs and slots) and Help. Actions that the tool bar also shows are the same
// QAction, so a shortcut is defined once.
#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QTabWidget>

#include "compare_panel.h"
#include "main_window.h"
#include "model_slot.h"
#include "tab_help.h"
#include "view_export.h"

namespace translution::ui {

void MainWindow::buildMenus() {
  buildFileMenu(menuBar()->addMenu(tr("&File")));
  buildViewMenu(menuBar()->addMenu(tr("&View")));
  buildHelpMenu(menuBar()->addMenu(tr("&Help")));
  updateSlotActions();
}

void MainWindow::buildFileMenu(QMenu* menu) {
  menu->setToolTipsVisible(true);
  menu->addAction(open_image_);
  // One entry per slot, made when the menu opens (slots come and go).
  checkpoint_menu_ = menu->addMenu(tr("Open &checkpoint into slot"));
  connect(checkpoint_menu_, &QMenu::aboutToShow, this, [this] {
    checkpoint_menu_->clear();
    for (int i = 0; i < compare_->slots().size(); ++i)
      checkpoint_menu_->addAction(tr("Slot %1…").arg(compare_->slots()[i]->name()), this,
                                  [this, i] { chooseCheckpoint(i); });
  });
  QAction* save = menu->addAction(tr("&Save picture of this view…"), this, &MainWindow::choosePictureFile);
  save->setShortcut(QKeySequence::Save);
  save->setToolTip(tr("The canvas and the current tab as PNG, SVG or PDF (Ctrl+S)"));
  menu->addSeparator();
  QAction* quit = menu->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  quit->setMenuRole(QAction::QuitRole);
}

// The tabs on Ctrl+1..N, and slots added or removed.
void MainWindow::buildViewMenu(QMenu* menu) {
  for (int i = 0; i < tabs_->count(); ++i) {
    QAction* tab = menu->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
    tab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
  }
  menu->addSeparator();
  add_slot_ = menu->addAction(tr("&Add slot"), compare_, &ComparePanel::addSlot);
  add_slot_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_N));
  remove_slot_ = menu->addAction(tr("&Remove last slot"), this,
                                 [this] { compare_->removeSlot(compare_->slots().last()); });
  remove_slot_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W));
}

void MainWindow::buildHelpMenu(QMenu* menu) {
  QAction* what = menu->addAction(tr("&What am I looking at?"), this, [this] {
    QMessageBox box(QMessageBox::Information, tabs_->tabText(tabs_->currentIndex()),
                    helpText(tabs_->currentIndex()), QMessageBox::Ok, this);
    box.setTextFormat(Qt::RichText);
    box.exec();
  });
  what->setShortcut(QKeySequence::HelpContents);
  menu->addAction(tr("&About Translution Studio"), this, [this] {
    QMessageBox box(QMessageBox::NoIcon, tr("About Translution Studio"), about_text(), QMessageBox::Ok, this);
    box.setTextFormat(Qt::RichText);
    box.setTextInteractionFlags(Qt::TextBrowserInteraction);
    box.exec();
  });
}

QString MainWindow::helpText(int index) const {
  return index >= 0 && index <= int(StudioTab::Attribution) ? tab_help_text(StudioTab(index)) : QString();
}

void MainWindow::updateSlotActions() {
  if (!add_slot_) return;
  add_slot_->setEnabled(compare_->slots().size() < ComparePanel::kMaxSlots);
  remove_slot_->setEnabled(compare_->slots().size() > ComparePanel::kMinSlots);
}

void MainWindow::chooseCheckpoint(int slot_index) {
  if (slot_index < compare_->slots().size()) compare_->chooseCheckpoint(compare_->slots()[slot_index]);
}

void MainWindow::choosePictureFile() {
  QSettings settings;
  const QString suggested = settings.value("export/pictureDir").toString() + "/" +
                            tabs_->tabText(tabs_->currentIndex()).toLower().replace(' ', '-') + ".png";
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save a picture of this view"), suggested, picture_file_filter());
  if (path.isEmpty()) return;
  settings.setValue("export/pictureDir", QFileInfo(path).absolutePath());
  const QString error = savePicture(path);
  if (!error.isEmpty()) QMessageBox::warning(this, tr("Cannot save the picture"), error);
}

// The central area (canvas and current tab), without menus, tool bar or status bar.
QString MainWindow::savePicture(const QString& path) { return save_widget_picture(centralWidget(), path); }

}  // namespace translution::ui
