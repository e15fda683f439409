#include "nn/vit_config.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

#include "util/error.h"

namespace translution {
namespace {

int64_t parse_int(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0') throw Error("config: " + key + " must be a whole number, got '" + value + "'");
  return v;
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw Error("config: " + key + " must be true or false, got '" + value + "'");
}

// One table of fields drives both writing and reading, so they cannot drift apart.
struct Field {
  std::function<std::string(const ViTConfig&)> get;
  std::function<void(ViTConfig&, const std::string& key, const std::string&)> set;
};

template <typename T>
Field int_field(T ViTConfig::*member) {
  return {[member](const ViTConfig& c) { return std::to_string(c.*member); },
          [member](ViTConfig& c, const std::string& k, const std::string& v) { c.*member = parse_int(k, v); }};
}
Field bool_field(bool ViTConfig::*member) {
  return {[member](const ViTConfig& c) { return std::string(c.*member ? "true" : "false"); },
          [member](ViTConfig& c, const std::string& k, const std::string& v) { c.*member = parse_bool(k, v); }};
}
Field string_field(std::string ViTConfig::*member) {
  return {[member](const ViTConfig& c) { return c.*member; },
          [member](ViTConfig& c, const std::string&, const std::string& v) { c.*member = v; }};
}

const std::vector<std::pair<std::string, Field>>& fields() {
  static const std::vector<std::pair<std::string, Field>> f = {
      {"model", string_field(&ViTConfig::model)},
      {"preset", string_field(&ViTConfig::preset)},
      {"image_height", int_field(&ViTConfig::image_height)},
      {"image_width", int_field(&ViTConfig::image_width)},
      {"patch", int_field(&ViTConfig::patch)},
      {"channels", int_field(&ViTConfig::channels)},
      {"classes", int_field(&ViTConfig::classes)},
      {"depth", int_field(&ViTConfig::depth)},
      {"dim", int_field(&ViTConfig::dim)},
      {"heads", int_field(&ViTConfig::heads)},
      {"head_dim", int_field(&ViTConfig::head_dim)},
      {"mlp_dim", int_field(&ViTConfig::mlp_dim)},
      {"lor_c1", int_field(&ViTConfig::lor_c1)},
      {"lor_c2", int_field(&ViTConfig::lor_c2)},
      {"lor_shared", bool_field(&ViTConfig::lor_shared)},
      {"position_embedding", bool_field(&ViTConfig::position_embedding)},
      {"first_model", string_field(&ViTConfig::first_model)},
      {"first_blocks", int_field(&ViTConfig::first_blocks)},
  };
  return f;
}

}  // namespace

std::string ViTConfig::block_model(int64_t block) const {
  return block < first_blocks && !first_model.empty() ? first_model : model;
}

AttentionSpec ViTConfig::attention_spec(int64_t block) const {
  AttentionSpec spec = attention_choice(block_model(block)).spec;
  spec.lor_c1 = lor_c1;
  spec.lor_c2 = lor_c2;
  spec.lor_shared = lor_shared;
  return spec;
}

std::string ViTConfig::to_text() const {
  std::ostringstream out;
  for (const auto& [key, field] : fields()) out << key << "=" << field.get(*this) << "\n";
  return out.str();
}

ViTConfig ViTConfig::from_text(const std::string& text) {
  ViTConfig c;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw Error("config: line '" + line + "' is not key=value");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    bool known = false;
    for (const auto& [name, field] : fields())
      if (name == key) {
        field.set(c, key, value);
        known = true;
      }
    if (!known) throw Error("config: unknown key '" + key + "'");
  }
  c.validate();
  return c;
}

void ViTConfig::validate() const {
  auto positive = [](const char* what, int64_t v) {
    if (v < 1) throw Error(std::string("config: ") + what + " must be at least 1, got " + std::to_string(v));
  };
  positive("image_height", image_height);
  positive("image_width", image_width);
  positive("patch", patch);
  positive("channels", channels);
  positive("classes", classes);
  positive("depth", depth);
  positive("dim", dim);
  positive("heads", heads);
  positive("head_dim", head_dim);
  positive("mlp_dim", mlp_dim);
  if (image_height % patch != 0 || image_width % patch != 0)
    throw Error("config: patch size " + std::to_string(patch) + " does not divide the " +
                std::to_string(image_height) + "x" + std::to_string(image_width) + " image");
  if (first_blocks < 0 || first_blocks > depth)
    throw Error("config: first_blocks must be between 0 and depth (" + std::to_string(depth) + "), got " +
                std::to_string(first_blocks));
  if (first_blocks > 0 && first_model.empty()) throw Error("config: first_blocks is set but first_model is empty");
  for (int64_t b = 0; b < depth; ++b) attention_spec(b).validate();  // also checks the model names
}

ViTConfig preset_config(const std::string& preset, const std::string& model) {
  ViTConfig c;
  c.model = model;
  c.preset = preset;
  if (preset == "A") {
    c.depth = 6, c.dim = 192, c.heads = 3, c.head_dim = 64, c.mlp_dim = 768;
  } else if (preset == "B") {
    c.depth = 12, c.dim = 192, c.heads = 3, c.head_dim = 64, c.mlp_dim = 768;
  } else if (preset == "C") {
    c.depth = 12, c.dim = 384, c.heads = 6, c.head_dim = 64, c.mlp_dim = 1536;
  } else if (preset == "tiny") {
    c.depth = 6, c.dim = 64, c.heads = 1, c.head_dim = 64, c.mlp_dim = 128;
  } else {
    throw Error("unknown preset '" + preset + "' (expected A, B, C or tiny)");
  }
  c.position_embedding = attention_choice(model).absolute_embedding;
  return c;
}

}  // namespace translution
