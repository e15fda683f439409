#include "bundled_models.h"

#include <QDir>
#include <QFile>

// A resource compiled into a static library is only linked when referenced.
static void init_bundled_resources() {
#ifdef TRANSLUTION_BUNDLED_MODELS
  Q_INIT_RESOURCE(models);
#endif
}

namespace translution::ui {

QStringList bundled_models() {
  init_bundled_resources();
  QStringList out;
  for (const QString& f : QDir(":/models").entryList({"*.ckpt"}, QDir::Files, QDir::Name)) out << ":/models/" + f;
  return out;
}

QString bundled_model(const QString& name) {
  init_bundled_resources();
  const QString path = ":/models/" + name + ".ckpt";
  return QFile::exists(path) ? path : QString();
}

}  // namespace translution::ui
