#include "util/json_writer.h"

#include <cmath>
#include <cstdio>

#include "util/key_value.h"

namespace translution {

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += char(c);
    else if (c == '\n') out += "\\n";
    else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else out += char(c);
  }
  return out + "\"";
}

std::string json_number(double value) { return std::isfinite(value) ? format_double(value) : "null"; }

void JsonWriter::key(const std::string& k) {
  if (!body_.empty()) body_ += ",";
  body_ += json_quote(k) + ":";
}

JsonWriter& JsonWriter::add(const std::string& k, const std::string& value) {
  key(k);
  body_ += json_quote(value);
  return *this;
}

JsonWriter& JsonWriter::add(const std::string& k, double value) {
  key(k);
  body_ += json_number(value);
  return *this;
}

JsonWriter& JsonWriter::add(const std::string& k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::add(const std::string& k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::add(const std::string& k, const std::vector<double>& values) {
  key(k);
  body_ += "[";
  for (size_t i = 0; i < values.size(); ++i) body_ += (i ? "," : "") + json_number(values[i]);
  body_ += "]";
  return *this;
}

JsonWriter& JsonWriter::add_raw(const std::string& k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

}  // namespace translution
