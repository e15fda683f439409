#include "bundled_models.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

// A resource compiled into a static library is only linked when referenced.
static void init_bundled_resources() {
#ifdef TRANSLUTION_BUNDLED_MODELS
  Q_INIT_RESOURCE(models);
#endif
}

namespace translution::ui {
namespace {

struct Known {
  const char* name;
  const char* title;
};
// Menu order: the three methods trained on moved digits, then the same three on centred ones.
const Known kKnown[] = {
    {"translution", QT_TRANSLATE_NOOP("BundledModels", "Translution, trained on digits anywhere")},
    {"lor", QT_TRANSLATE_NOOP("BundledModels", "LoR-Translution, trained on digits anywhere")},
    {"attention", QT_TRANSLATE_NOOP("BundledModels", "Self-attention, trained on digits anywhere")},
    {"translution-static", QT_TRANSLATE_NOOP("BundledModels", "Translution, trained on centred digits")},
    {"lor-static", QT_TRANSLATE_NOOP("BundledModels", "LoR-Translution, trained on centred digits")},
    {"attention-static", QT_TRANSLATE_NOOP("BundledModels", "Self-attention, trained on centred digits")},
};

}  // namespace

QList<BundledModel> bundled_model_list() {
  init_bundled_resources();
  QList<BundledModel> out;
  QStringList files = QDir(":/models").entryList({"*.ckpt"}, QDir::Files, QDir::Name);
  for (const Known& k : kKnown) {
    const QString file = QString(k.name) + ".ckpt";
    if (!files.removeOne(file)) continue;
    out << BundledModel{k.name, ":/models/" + file, QCoreApplication::translate("BundledModels", k.title)};
  }
  for (const QString& file : files) {  // any other checkpoint dropped into resources/models
    const QString name = QFileInfo(file).completeBaseName();
    out << BundledModel{name, ":/models/" + file, name};
  }
  return out;
}

QStringList bundled_models() {
  QStringList out;
  for (const BundledModel& m : bundled_model_list()) out << m.path;
  return out;
}

QString bundled_model(const QString& name) {
  init_bundled_resources();
  const QString path = ":/models/" + name + ".ckpt";
  return QFile::exists(path) ? path : QString();
}

QString bundled_model_title(const QString& path) {
  for (const BundledModel& m : bundled_model_list())
    if (m.path == path) return m.title;
  return {};
}

}  // namespace translution::ui
