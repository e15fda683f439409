#pragma once
// Structs that round-trip through `key=value` lines (configs, checkpoint
// metadata). One field table per struct drives both writing and reading, so the
// two cannot drift apart; unknown keys and bad values are errors naming them.
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "util/error.h"

namespace translution {

int64_t parse_int_value(const std::string& what, const std::string& value);
double parse_double_value(const std::string& what, const std::string& value);
bool parse_bool_value(const std::string& what, const std::string& value);
std::string format_double(double value);  // shortest text that reads back exactly

// Splits "key=value" lines (blank lines and # comments skipped); `what` prefixes errors.
std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text,
                                                                  const std::string& what);

template <typename T>
struct KeyValueField {
  std::string key;
  std::function<std::string(const T&)> get;
  std::function<void(T&, const std::string& value)> set;
};

template <typename T, typename M>
KeyValueField<T> int_field(std::string key, M T::*member) {
  const std::string what = key;
  return {key, [member](const T& t) { return std::to_string(t.*member); },
          [member, what](T& t, const std::string& v) { t.*member = M(parse_int_value(what, v)); }};
}

template <typename T>
KeyValueField<T> double_field(std::string key, double T::*member) {
  const std::string what = key;
  return {key, [member](const T& t) { return format_double(t.*member); },
          [member, what](T& t, const std::string& v) { t.*member = parse_double_value(what, v); }};
}

template <typename T>
KeyValueField<T> bool_field(std::string key, bool T::*member) {
  const std::string what = key;
  return {key, [member](const T& t) { return std::string(t.*member ? "true" : "false"); },
          [member, what](T& t, const std::string& v) { t.*member = parse_bool_value(what, v); }};
}

template <typename T>
KeyValueField<T> string_field(std::string key, std::string T::*member) {
  return {key, [member](const T& t) { return t.*member; },
          [member](T& t, const std::string& v) { t.*member = v; }};
}

template <typename T>
std::string fields_to_text(const T& object, const std::vector<KeyValueField<T>>& fields) {
  std::ostringstream out;
  for (const auto& f : fields) out << f.key << "=" << f.get(object) << "\n";
  return out.str();
}

// Fields absent from `text` keep the values `object` already has.
template <typename T>
void fields_from_text(T& object, const std::string& text, const std::vector<KeyValueField<T>>& fields,
                      const std::string& what) {
  for (const auto& [key, value] : parse_key_values(text, what)) {
    const KeyValueField<T>* found = nullptr;
    for (const auto& f : fields)
      if (f.key == key) found = &f;
    if (!found) throw Error(what + ": unknown key '" + key + "'");
    found->set(object, value);
  }
}

}  // namespace translution
