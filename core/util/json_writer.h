#pragma once
// One flat JSON object, built field by field (what `--json` prints per line).
// Strings are escaped; non-finite numbers become null.
#include <cstdint>
#include <string>
#include <vector>

namespace translution {

class JsonWriter {
 public:
  JsonWriter& add(const std::string& key, const std::string& value);
  JsonWriter& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonWriter& add(const std::string& key, double value);
  JsonWriter& add(const std::string& key, int64_t value);
  JsonWriter& add(const std::string& key, int value) { return add(key, int64_t(value)); }
  JsonWriter& add(const std::string& key, bool value);
  JsonWriter& add(const std::string& key, const std::vector<double>& values);
  JsonWriter& add_raw(const std::string& key, const std::string& json);  // nested value already in JSON
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

std::string json_quote(const std::string& text);
std::string json_number(double value);

}  // namespace translution
