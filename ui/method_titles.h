#pragma once
// The attention operators as the studio names them: "LoR-Translution" where the command
// line and checkpoints say "lor", "Translution (Q, K only)" for "translution-qk". The CLI name stays the
// combo boxes' data.
#include <string>

#include <QString>

namespace translution::ui {

// A title for every name of nn/attention_spec's attention_choices(); an unknown name as it is.
QString method_title(const std::string& name);

}  // namespace translution::ui
