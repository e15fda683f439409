#include "io/safetensors_file.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <ostream>
#include <sstream>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/md5.h"

namespace translution {
namespace {

using nlohmann::json;

const std::pair<const char*, at::ScalarType> kDtypes[] = {
    {"BOOL", at::kBool}, {"U8", at::kByte},   {"I8", at::kChar},  {"I16", at::kShort},
    {"I32", at::kInt},   {"I64", at::kLong},  {"F16", at::kHalf}, {"BF16", at::kBFloat16},
    {"F32", at::kFloat}, {"F64", at::kDouble}};

// The one serialisation both digests are taken of: keys sorted, no spaces, bad UTF-8 replaced.
std::string canonical(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// What the header's JSON holds, counted outside strings before the parser sees the text.
struct JsonCounts {
  uint64_t top_fields = 0;   // members of the outermost object: the tensors and __metadata__
  uint64_t containers = 0;   // objects and arrays
  uint64_t fields = 0;       // object members at any depth
  uint64_t array_items = 0;  // array elements at any depth (at most: an empty array counts one)
};

JsonCounts count_json(const std::string& text, const std::string& name) {
  JsonCounts n;
  std::vector<char> open;  // the brackets enclosing the current position
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      // A header's lists (shapes, offsets) hold numbers only: a list of strings, which
      // parse to many times their text, is no part of one.
      if (!open.empty() && open.back() == '[')
        throw Error(name +
                    ": its header holds a list with text in it; a safetensors header's lists hold numbers");
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (int(open.size()) >= kMaxSafetensorsDepth)
        throw Error(name + ": its header nests deeper than " + std::to_string(kMaxSafetensorsDepth) +
                    " levels");
      ++n.containers;
      if (c == '[') ++n.array_items;
      open.push_back(c);
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    } else if (c == ':') {
      ++n.fields;
      if (open.size() == 1) ++n.top_fields;
    } else if (c == ',' && !open.empty() && open.back() == '[') {
      ++n.array_items;
    }
  }
  return n;
}

// A parsed header takes many times the bytes of its text where the text is all brackets
// ({} is two bytes and a map), so its structure is bounded by what its tensors can need:
// each tensor one object of three fields and two arrays (its shape, its offsets), and
// __metadata__ an object of strings. Anything beyond is no safetensors header.
void check_structure(const std::string& text, const std::string& name) {
  const JsonCounts n = count_json(text, name);
  if (n.top_fields > kMaxSafetensorsTensors + 1)
    throw Error(name + ": its header lists " + std::to_string(n.top_fields) + " entries, more than the " +
                std::to_string(kMaxSafetensorsTensors) + " tensors a file may hold");
  if (n.containers > 3 * n.top_fields + 2 || n.fields > 4 * n.top_fields + kMaxSafetensorsMetadata ||
      n.array_items > (kMaxSafetensorsRank + 2) * n.top_fields)
    throw Error(name + ": its header holds more objects, arrays or fields than its " +
                std::to_string(n.top_fields) + " entries need");
}

uint64_t count(const json& v, const std::string& what, const std::string& name) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw Error(name + ": " + what + " is not a non-negative integer");
  return v.get<uint64_t>();
}

SafetensorsEntry entry(const std::string& key, const json& v, const std::string& name) {
  const std::string what = "tensor '" + key + "'";
  if (!v.is_object()) throw Error(name + ": " + what + " is not described by an object");
  for (const auto& field : v.items())
    if (field.key() != "dtype" && field.key() != "shape" && field.key() != "data_offsets")
      throw Error(name + ": " + what + " has an unknown field '" + field.key() + "'");
  if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    throw Error(name + ": " + what + " lacks its dtype, shape or data_offsets");
  SafetensorsEntry e;
  e.name = key;
  const json& dtype = v.at("dtype");
  const auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const auto& d) {
    return dtype.is_string() && dtype.get<std::string>() == d.first;
  });
  if (known == std::end(kDtypes))
    throw Error(name + ": " + what + " has dtype " + dtype.dump() + ", which this engine does not read");
  e.dtype = known->second;
  const json& shape = v.at("shape");
  if (!shape.is_array() || shape.size() > kMaxSafetensorsRank)
    throw Error(name + ": " + what + "'s shape is not a list of at most " +
                std::to_string(kMaxSafetensorsRank) + " sizes");
  uint64_t bytes = at::elementSize(e.dtype);
  for (const json& d : shape) {
    e.shape.push_back(int64_t(count(d, what + "'s shape", name)));
    if (__builtin_mul_overflow(bytes, uint64_t(e.shape.back()), &bytes))
      throw Error(name + ": " + what + "'s shape " + shape.dump() + " overflows a 64-bit size");
  }
  const json& offsets = v.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2)
    throw Error(name + ": " + what + "'s data_offsets are not [begin, end]");
  e.begin = count(offsets[0], what + "'s first offset", name);
  e.end = count(offsets[1], what + "'s second offset", name);
  if (e.end < e.begin) throw Error(name + ": " + what + " ends before it begins");
  if (e.end - e.begin != bytes)
    throw Error(name + ": " + what + " is " + dtype.get<std::string>() + " " + shape.dump() + " (" +
                std::to_string(bytes) + " bytes) but its offsets span " + std::to_string(e.end - e.begin));
  return e;
}

std::map<std::string, std::string> metadata(const json& v, const std::string& name) {
  if (!v.is_object()) throw Error(name + ": its __metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (const auto& item : v.items()) {
    if (!item.value().is_string()) throw Error(name + ": metadata '" + item.key() + "' is not a string");
    out[item.key()] = item.value().get<std::string>();
  }
  return out;
}

// In place, not on a copy (a header's parse is its largest allocation): the digest's own field
// is taken out while the rest is hashed, then put back.
void check_header_digest(json& j, const std::map<std::string, std::string>& meta, const std::string& name) {
  const auto digest = meta.find("header_md5");
  if (digest == meta.end()) return;
  json& header_meta = j["__metadata__"];
  header_meta.erase("header_md5");
  const std::string text = canonical(j);
  header_meta["header_md5"] = digest->second;
  if (md5_hex(text.data(), text.size()) != digest->second)
    throw Error(name + " is corrupt: its header does not match the header_md5 it carries");
}

// Sorted by offset, the entries must tile the buffer: no overlap, no gap, nothing left over.
void check_tiling(std::vector<SafetensorsEntry>& entries, uint64_t buffer, const std::string& name) {
  std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t at = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& e = entries[i];
    if (e.begin < at)
      throw Error(name + ": tensor '" + e.name + "' overlaps tensor '" + entries[i - 1].name + "'");
    if (e.begin > at)
      throw Error(name + ": bytes " + std::to_string(at) + " to " + std::to_string(e.begin) +
                  " of its buffer belong to no tensor");
    at = e.end;
  }
  if (at > buffer)
    throw Error(name + " is truncated: its tensors need " + std::to_string(at) +
                " bytes after the header, and " + std::to_string(buffer) + " are there");
  if (at < buffer) throw Error(name + " has " + std::to_string(buffer - at) + " bytes after its last tensor");
}

}  // namespace

std::string safetensors_dtype_name(at::ScalarType dtype) {
  for (const auto& [text, type] : kDtypes)
    if (type == dtype) return text;
  throw Error(std::string("safetensors has no name for tensors of ") + c10::toString(dtype));
}

SafetensorsHeader read_safetensors_header(const ByteSource& source) {
  const std::string& name = source.name();
  if (source.size() < 8)
    throw Error(name + " is too short to be a safetensors file (" + std::to_string(source.size()) +
                " bytes)");
  unsigned char length[8];
  source.read(0, length, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | length[i];
  if (n > kMaxSafetensorsHeader)
    throw Error(name + ": its header length says " + std::to_string(n) + " bytes, more than the " +
                std::to_string(kMaxSafetensorsHeader >> 20) + " MB a header may have");
  if (n > source.size() - 8)
    throw Error(name + " is truncated: its header length says " + std::to_string(n) + " bytes and " +
                std::to_string(source.size() - 8) + " follow");
  std::string text(size_t(n), '\0');
  source.read(8, text.data(), text.size());
  if (text.empty() || text[0] != '{') throw Error(name + ": its header is not a JSON object");
  check_structure(text, name);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(name + ": its header is not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw Error(name + ": its header is not a JSON object");
  SafetensorsHeader header;
  header.buffer_offset = 8 + n;
  header.buffer_bytes = source.size() - header.buffer_offset;
  if (j.contains("__metadata__")) header.metadata = metadata(j.at("__metadata__"), name);
  check_header_digest(j, header.metadata, name);
  for (const auto& item : j.items())
    if (item.key() != "__metadata__") header.entries.push_back(entry(item.key(), item.value(), name));
  check_tiling(header.entries, header.buffer_bytes, name);
  return header;
}

NamedTensors read_safetensors_tensors(const ByteSource& source, const SafetensorsHeader& header) {
  NamedTensors out;
  Md5 md5;
  for (const SafetensorsEntry& e : header.entries) {
    at::Tensor t = at::empty(e.shape, at::TensorOptions(e.dtype));
    const size_t bytes = size_t(e.end - e.begin);
    if (bytes) {
      source.read(header.buffer_offset + e.begin, t.data_ptr(), bytes);
      md5.update(t.data_ptr(), bytes);
    }
    if (e.dtype == at::kBool && t.view(at::kByte).gt(1).any().item<bool>())
      throw Error(source.name() + ": boolean tensor '" + e.name + "' holds a byte other than 0 or 1");
    out.emplace_back(e.name, std::move(t));
  }
  const auto digest = header.metadata.find("data_md5");
  if (digest != header.metadata.end() && md5.hex_digest() != digest->second)
    throw Error(source.name() + " is corrupt: its tensors' bytes do not match the data_md5 in its header");
  return out;
}

std::string safetensors_bytes(const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::vector<at::Tensor> data;
  uint64_t at = 0;
  Md5 md5;
  for (const auto& [key, tensor] : tensors) {
    if (key == "__metadata__" || header.contains(key))
      throw Error("safetensors: the tensor name '" + key + "' is taken");
    const at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const uint64_t bytes = t.nbytes();
    header[key] = {{"dtype", safetensors_dtype_name(t.scalar_type())},
                   {"shape", std::vector<int64_t>(t.sizes().begin(), t.sizes().end())},
                   {"data_offsets", {at, at + bytes}}};
    if (bytes) md5.update(t.data_ptr(), bytes);
    at += bytes;
    data.push_back(t);
  }
  json meta = json::object();
  for (const auto& [k, v] : metadata) {
    if (k == "data_md5" || k == "header_md5")
      throw Error("safetensors: the metadata key '" + k + "' is the writer's own");
    meta[k] = v;
  }
  meta["data_md5"] = md5.hex_digest();
  header["__metadata__"] = meta;
  const std::string unsigned_text = canonical(header);
  header["__metadata__"]["header_md5"] = md5_hex(unsigned_text.data(), unsigned_text.size());
  std::string text = canonical(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // the buffer starts 8-byte aligned
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  out.reserve(8 + text.size() + at);
  out += text;
  for (const at::Tensor& t : data) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  return out;
}

}  // namespace translution
