#include "method_titles.h"

#include <QCoreApplication>
#include <QStringList>

namespace translution::ui {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("MethodTitles", text); }

// "qk" -> "Q, K": which of query, key and value have relative matrices.
QString letters(const std::string& lower) {
  QStringList out;
  for (const char c : lower) out << QString(QChar(c)).toUpper();
  return out.join(", ");
}

// translution, translution-q, lor-kv, ... (the relative operators and their ablations).
QString relative_title(const QString& family, const std::string& suffix) {
  if (suffix.empty()) return family;  // query, key and value: the operator as the papers define it
  if (suffix == "abs") return tr("%1, a matrix per pair").arg(family);
  return tr("%1 (%2 only)").arg(family, letters(suffix));
}

}  // namespace

QString method_title(const std::string& name) {
  static const struct {
    const char* name;
    const char* title;
  } fixed[] = {
      {"attention", QT_TRANSLATE_NOOP("MethodTitles", "Self-attention")},
      {"attention-nope", QT_TRANSLATE_NOOP("MethodTitles", "Self-attention, no position")},
      {"rel-key", QT_TRANSLATE_NOOP("MethodTitles", "Relative key vectors")},
      {"rel-value", QT_TRANSLATE_NOOP("MethodTitles", "Relative value vectors")},
      {"rel-bias", QT_TRANSLATE_NOOP("MethodTitles", "Relative bias")},
      {"gpsa", QT_TRANSLATE_NOOP("MethodTitles", "Gated positional (GPSA)")},
      {"rope", QT_TRANSLATE_NOOP("MethodTitles", "Rotary (RoPE)")},
      {"rope-translution", QT_TRANSLATE_NOOP("MethodTitles", "RoPE-Translution")},
      {"lor-rope-translution", QT_TRANSLATE_NOOP("MethodTitles", "LoR-RoPE-Translution")},
  };
  for (const auto& f : fixed)
    if (name == f.name) return tr(f.title);
  for (const auto& [prefix, family] : {std::pair{std::string("translution"), tr("Translution")},
                                       std::pair{std::string("lor"), tr("LoR-Translution")}}) {
    if (name == prefix) return relative_title(family, "");
    if (name.rfind(prefix + "-", 0) == 0) return relative_title(family, name.substr(prefix.size() + 1));
  }
  return QString::fromStdString(name);
}

QString trained_mark(const std::map<std::string, std::string>& metadata) {
  const auto dataset = metadata.find("dataset");
  const std::string trained = dataset == metadata.end() ? "" : dataset->second;
  return trained == "static" ? " (S)" : trained == "dynamic" ? " (D)" : "";
}

QString trained_mark_meaning(const std::map<std::string, std::string>& metadata) {
  const QString mark = trained_mark(metadata);
  if (mark.isEmpty()) return {};
  return mark == " (S)" ? tr("(S): trained on centred digits (static)")
                        : tr("(D): trained on digits anywhere on the canvas (dynamic)");
}

QString model_title(const std::string& method, const std::map<std::string, std::string>& metadata) {
  return method_title(method) + trained_mark(metadata);
}

}  // namespace translution::ui
