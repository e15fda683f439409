#include "model_variant.h"

#include <QObject>
#include <QStringList>

namespace translution::ui {

QString model_variant(const ViTConfig& c) {
  QStringList parts;
  if (c.first_blocks > 0 && !c.first_model.empty())
    parts << QObject::tr("first %1 of %2").arg(c.first_blocks).arg(QString::fromStdString(c.first_model));
  bool lor = false;
  for (int64_t b = 0; b < c.depth; ++b)
    lor = lor || c.attention_spec(b).method == AttentionMethod::LoRTranslution;
  if (lor) {
    QString widths = QObject::tr("LoR %1x%2").arg(c.lor_c1).arg(c.lor_c2);
    if (!c.lor_shared) widths += QObject::tr(" unshared");
    if (c.lor_value_slices) widths += QObject::tr(" sliced values");
    parts << widths;
  }
  if (c.layout != "grid") parts << QString::fromStdString(c.layout);
  return parts.join(", ");
}

}  // namespace translution::ui
