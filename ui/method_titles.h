#pragma once
// The attention operators as the studio names them: "LoR-Translution" where the command
// line and checkpoints say "lor", "Translution (Q, K only)" for "translution-qk". The CLI name stays the
// combo boxes' data.
#include <map>
#include <string>

#include <QString>

namespace translution::ui {

// A title for every name of nn/attention_spec's attention_choices(); an unknown name as it is.
QString method_title(const std::string& name);

// A trained model's title: its method's, then " (S)" or " (D)" where its checkpoint says it was
// trained on centred ("static") or moved ("dynamic") digits, so that two models of one
// method side by side are told apart.
QString model_title(const std::string& method, const std::map<std::string, std::string>& metadata);
// That title's ending: " (S)", " (D)" or empty.
QString trained_mark(const std::map<std::string, std::string>& metadata);
// What the ending means, in words for a tooltip ("(S): trained on centred digits"); empty for none.
QString trained_mark_meaning(const std::map<std::string, std::string>& metadata);

}  // namespace translution::ui
