#include "nn/attention_spec.h"

#include "util/error.h"

namespace translution {
namespace {

AttentionChoice make_relative(const std::string& prefix, AttentionMethod method, const std::string& letters,
                              PairEncoding encoding, const std::string& description) {
  AttentionSpec spec;
  spec.method = method;
  spec.rel_q = letters.find('Q') != std::string::npos;
  spec.rel_k = letters.find('K') != std::string::npos;
  spec.rel_v = letters.find('V') != std::string::npos;
  spec.encoding = encoding;
  std::string lower;
  for (char c : letters) lower += char(c - 'A' + 'a');
  const std::string name = letters == "QKV" ? prefix : prefix + "-" + lower;
  return {name, description, spec, false};
}

std::vector<AttentionChoice> build_choices() {
  std::vector<AttentionChoice> out;
  AttentionSpec plain;
  out.push_back(
      {"attention", "self-attention with a learned absolute position embedding (ViT)", plain, true});
  out.push_back({"attention-nope", "self-attention without any position embedding", plain, false});
  const struct {
    const char* name;
    AttentionMethod method;
    const char* description;
  } baselines[] = {
      {"rel-key", AttentionMethod::RelativeKeyVector, "relative key vector (Shaw et al.): k_j + r[delta_ij]"},
      {"rel-value", AttentionMethod::RelativeValueVector,
       "relative value vector (Shaw et al.): v_j + r[delta_ij]"},
      {"rel-bias", AttentionMethod::RelativeBias, "relative scalar bias per head (Swin, CoAtNet)"},
      {"gpsa", AttentionMethod::GatedPositional, "gated positional self-attention (ConViT)"},
      {"rope", AttentionMethod::Rotary, "2-D rotary position embedding (RoFormer)"},
  };
  for (const auto& b : baselines) {
    AttentionSpec spec;
    spec.method = b.method;
    out.push_back({b.name, b.description, spec, false});
  }
  for (const std::string letters : {"QKV", "Q", "K", "V", "QK", "QV", "KV"}) {
    const std::string which = letters == "QKV" ? "query, key and value" : letters;
    out.push_back(make_relative("translution", AttentionMethod::Translution, letters, PairEncoding::Relative,
                                "Translution: offset-indexed matrices for " + which + " (Eq. 1)"));
  }
  for (const std::string letters : {"QKV", "Q", "K", "V", "QK", "QV", "KV"}) {
    const std::string which = letters == "QKV" ? "query, key and value" : letters;
    out.push_back(make_relative("lor", AttentionMethod::LoRTranslution, letters, PairEncoding::Relative,
                                "LoR-Translution: low-rank relative matrices for " + which + " (Eq. 2)"));
  }
  AttentionChoice rope =
      make_relative("rope-translution", AttentionMethod::Translution, "V", PairEncoding::Relative,
                    "RoPE-Translution: rotary q and k, offset-indexed value matrices");
  rope.name = "rope-translution";
  rope.spec.rotary = true;
  out.push_back(rope);
  AttentionChoice lor_rope =
      make_relative("lor-rope-translution", AttentionMethod::LoRTranslution, "V", PairEncoding::Relative,
                    "LoR-RoPE-Translution: rotary q and k, low-rank relative values");
  lor_rope.name = "lor-rope-translution";
  lor_rope.spec.rotary = true;
  out.push_back(lor_rope);
  out.push_back(
      make_relative("translution-abs", AttentionMethod::Translution, "QKV", PairEncoding::Absolute,
                    "Translution with one matrix per (i, j) pair: the absolute ablation of Table 5"));
  out.push_back(make_relative("lor-abs", AttentionMethod::LoRTranslution, "QKV", PairEncoding::Absolute,
                              "LoR-Translution with one matrix per (i, j) pair (Table 5)"));
  return out;
}

}  // namespace

std::string AttentionSpec::qkv_letters() const {
  return std::string(rel_q ? "Q" : "") + (rel_k ? "K" : "") + (rel_v ? "V" : "");
}

std::string AttentionSpec::name() const {
  switch (method) {
    case AttentionMethod::SelfAttention: return "attention";
    case AttentionMethod::RelativeKeyVector: return "rel-key";
    case AttentionMethod::RelativeValueVector: return "rel-value";
    case AttentionMethod::RelativeBias: return "rel-bias";
    case AttentionMethod::GatedPositional: return "gpsa";
    case AttentionMethod::Rotary: return "rope";
    default: break;
  }
  if (rotary) return method == AttentionMethod::Translution ? "rope-translution" : "lor-rope-translution";
  std::string prefix = method == AttentionMethod::Translution ? "translution" : "lor";
  if (encoding == PairEncoding::Absolute) prefix += "-abs";
  std::string letters = qkv_letters(), lower;
  for (char c : letters) lower += char(c - 'A' + 'a');
  return letters == "QKV" ? prefix : prefix + "-" + lower;
}

void AttentionSpec::validate() const {
  if (!relative()) {
    if (rotary) throw Error(name() + ": only the Translution operators take rotary queries and keys");
    return;
  }
  if (!rel_q && !rel_k && !rel_v) throw Error(name() + ": at least one of q, k, v must be relative");
  if (rotary && (rel_q || rel_k || !rel_v || encoding != PairEncoding::Relative))
    throw Error(name() + ": rotary queries and keys go with relative values alone, on offsets");
  if (method == AttentionMethod::LoRTranslution) {
    if (lor_c1 < 1 || lor_c2 < 1)
      throw Error("LoR-Translution relative dims must be at least 1, got C1=" + std::to_string(lor_c1) +
                  " C2=" + std::to_string(lor_c2));
    if (!lor_shared && !rel_v)
      throw Error(name() +
                  " without the shared W^q, W^k, W^v terms needs a relative value: nothing would "
                  "produce values");
    if (!lor_shared && !rel_q && !rel_k)
      throw Error(name() +
                  " without the shared terms needs a relative query or key: attention would be uniform");
  }
}

const std::vector<AttentionChoice>& attention_choices() {
  static const std::vector<AttentionChoice> choices = build_choices();
  return choices;
}

const AttentionChoice& attention_choice(const std::string& name) {
  for (const auto& c : attention_choices())
    if (c.name == name) return c;
  std::string names;
  for (const auto& c : attention_choices()) names += (names.empty() ? "" : ", ") + c.name;
  throw Error("unknown model '" + name + "'; known: " + names);
}

}  // namespace translution
