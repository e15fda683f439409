#include "infer/offset_knockout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {
namespace {

std::string offset_text(const Offset& o) {
  return "(" + std::to_string(o.dy) + ", " + std::to_string(o.dx) + ")";
}

std::string range_text(int64_t extent) {
  return "[" + std::to_string(-(extent - 1)) + ", " + std::to_string(extent - 1) + "]";
}

// The table entry of each offset, in the paper's indexing.
std::map<Offset, int64_t> offset_entries(const RelativeTable& table) {
  std::map<Offset, int64_t> out;
  for (size_t e = 0; e < table.info.size(); ++e)
    if (table.info[e].kind == EntryInfo::Kind::Offset) out[{table.info[e].dy, table.info[e].dx}] = int64_t(e);
  return out;
}

int64_t cls_entry(const RelativeTable& table, EntryInfo::Kind kind) {
  for (size_t e = 0; e < table.info.size(); ++e)
    if (table.info[e].kind == kind) return int64_t(e);
  throw Error("the CLS matrices cannot be knocked out: the model's layout (" + table.layout.describe() +
              ") has no CLS token");
}

// The knockout's table entries in the paper's indexing (q and v use them as they
// are; keys go through the mirror), checked against the layout.
std::vector<int64_t> paper_entries(const RelativeTable& table, const OffsetKnockout& k) {
  const std::map<Offset, int64_t> entries = offset_entries(table);
  std::set<int64_t> out;
  for (const Offset& o : k.offsets) {
    const auto it = entries.find(o);
    if (it == entries.end())
      throw Error("offset " + offset_text(o) + " is not on the model's grid of offsets (dy in " +
                  range_text(table.layout.height) + ", dx in " + range_text(table.layout.width) +
                  (table.layout.causal ? ", dx >= 0 in a causal sequence)" : ")"));
    out.insert(it->second);
  }
  if (k.cls_self) out.insert(cls_entry(table, EntryInfo::Kind::ClsSelf));
  if (k.cls_in) out.insert(cls_entry(table, EntryInfo::Kind::ClsIn));
  if (k.cls_out) out.insert(cls_entry(table, EntryInfo::Kind::ClsOut));
  return {out.begin(), out.end()};
}

struct BankPlan {
  at::Tensor bank;
  std::vector<int64_t> entries;  // stored
};

std::vector<int64_t> chosen_layers(const ViTConfig& config, const OffsetKnockout& k) {
  if (k.layers.empty()) {
    std::vector<int64_t> all(size_t(config.depth));
    for (int64_t b = 0; b < config.depth; ++b) all[size_t(b)] = b;
    return all;
  }
  for (const int64_t b : k.layers)
    if (b < 0 || b >= config.depth)
      throw Error("layer " + std::to_string(b) + " is not in the model: its layers are 0 to " +
                  std::to_string(config.depth - 1));
  return k.layers;
}

// Every bank the knockout changes, with the stored entries it replaces there.
std::vector<BankPlan> plan_knockout(const ViT& model, const OffsetKnockout& k) {
  const ViTConfig& config = model->config();
  const RelativeTable table = make_relative_table(config.token_layout());
  const std::vector<int64_t> paper = paper_entries(table, k);  // checks the offsets whatever the layers
  const auto parameters = model->named_parameters(true);
  const bool chosen[3] = {k.q, k.k, k.v};
  std::vector<BankPlan> plans;
  for (const int64_t b : chosen_layers(config, k)) {
    const AttentionSpec spec = config.attention_spec(b);
    if (!spec.relative()) continue;
    if (spec.encoding != PairEncoding::Relative)
      throw Error(
          "layer " + std::to_string(b) + " (" + config.block_model(b) +
          ") has one matrix per token pair, not per offset: offset knockout needs offset-indexed banks");
    const bool relative[3] = {spec.rel_q, spec.rel_k, spec.rel_v};
    for (int role = 0; role < 3; ++role) {
      if (!chosen[role] || !relative[role] || paper.empty()) continue;
      const std::string name = "block" + std::to_string(b) + ".attention.w" + "qkv"[role];
      const at::Tensor* bank = parameters.find(name);
      if (!bank || bank->dim() != 3 || bank->size(0) != table.entries)
        throw Error("parameter " + name + " is not a bank of " + std::to_string(table.entries) +
                    " offset matrices in this " + config.block_model(b) + " model");
      BankPlan plan{*bank, {}};
      for (const int64_t e : paper) plan.entries.push_back(role == 1 ? table.mirror[size_t(e)] : e);
      plans.push_back(std::move(plan));
    }
  }
  if (plans.empty() && !paper.empty())
    throw Error("the knockout (" + k.describe() + ") replaces no matrix: " + config.model +
                " has no offset-indexed bank for the chosen projections in the chosen layers");
  return plans;
}

// [C, C'] that replaces every knocked-out matrix of `bank`.
at::Tensor replacement_matrix(const at::Tensor& bank, const RelativeTable& table,
                              OffsetKnockout::Replacement r) {
  if (r == OffsetKnockout::Replacement::Zero) return at::zeros({bank.size(1), bank.size(2)}, bank.options());
  std::vector<int64_t> offsets;  // the same set for a mirrored bank: the mirror maps offsets to offsets
  for (size_t e = 0; e < table.info.size(); ++e)
    if (table.info[e].kind == EntryInfo::Kind::Offset) offsets.push_back(int64_t(e));
  const at::Tensor index = at::tensor(offsets, at::kLong).to(bank.device());
  return bank.index_select(0, index).mean(0);
}

}  // namespace

std::string replacement_name(OffsetKnockout::Replacement r) {
  return r == OffsetKnockout::Replacement::Zero ? "zero" : "mean";
}

OffsetKnockout::Replacement parse_replacement(const std::string& name) {
  if (name == "zero") return OffsetKnockout::Replacement::Zero;
  if (name == "mean") return OffsetKnockout::Replacement::Mean;
  throw Error("knockout replacement '" + name + "' is not one of: zero, mean");
}

std::string OffsetKnockout::describe() const {
  std::string s = std::to_string(offsets.size()) + (offsets.size() == 1 ? " offset" : " offsets");
  if (any_cls()) s += " + CLS";
  s += ",";
  for (const auto& [on, letter] : {std::pair{q, " q"}, std::pair{k, " k"}, std::pair{v, " v"}})
    if (on) s += letter;
  s += ", " + replacement_name(replacement) + ", ";
  if (layers.empty()) return s + "all layers";
  s += layers.size() == 1 ? "layer" : "layers";
  for (const int64_t b : layers) s += " " + std::to_string(b);
  return s;
}

std::vector<Offset> layout_offsets(const TokenLayout& layout) {
  std::vector<Offset> out;
  for (const EntryInfo& info : make_relative_table(layout).info)
    if (info.kind == EntryInfo::Kind::Offset) out.push_back({info.dy, info.dx});
  return out;
}

std::vector<Offset> offsets_beyond(const TokenLayout& layout, double r) {
  std::vector<Offset> out;
  for (const Offset& o : layout_offsets(layout))
    if (std::sqrt(double(o.dy * o.dy + o.dx * o.dx)) > r) out.push_back(o);
  return out;
}

std::vector<Offset> offsets_in_rectangle(const TokenLayout& layout, Offset a, Offset b) {
  const std::vector<Offset> all = layout_offsets(layout);
  for (const Offset& corner : {a, b})
    if (std::find(all.begin(), all.end(), corner) == all.end())
      throw Error("rectangle corner " + offset_text(corner) +
                  " is not on the model's grid of offsets (dy in " + range_text(layout.height) + ", dx in " +
                  range_text(layout.width) + ")");
  std::vector<Offset> out;
  for (const Offset& o : all)
    if (o.dy >= std::min(a.dy, b.dy) && o.dy <= std::max(a.dy, b.dy) && o.dx >= std::min(a.dx, b.dx) &&
        o.dx <= std::max(a.dx, b.dx))
      out.push_back(o);
  return out;
}

AppliedKnockout::AppliedKnockout(ViT model, const OffsetKnockout& knockout) {
  const std::vector<BankPlan> plans = plan_knockout(model, knockout);
  const RelativeTable table = make_relative_table(model->config().token_layout());
  at::NoGradGuard no_grad;
  // Every replacement is taken before the first write, so a mean never reads a matrix this knockout replaced.
  std::vector<at::Tensor> replacements;
  for (const BankPlan& p : plans)
    replacements.push_back(replacement_matrix(p.bank, table, knockout.replacement));
  for (size_t i = 0; i < plans.size(); ++i) {
    Edit edit{plans[i].bank, at::tensor(plans[i].entries, at::kLong).to(plans[i].bank.device()), {}};
    edit.saved = edit.bank.index_select(0, edit.entries);
    const int64_t n = edit.entries.size(0);
    edit.bank.index_copy_(0, edit.entries, replacements[i].unsqueeze(0).expand({n, -1, -1}).contiguous());
    matrices_ += n;
    edits_.push_back(std::move(edit));
  }
}

AppliedKnockout::~AppliedKnockout() { restore(); }

void AppliedKnockout::restore() {
  at::NoGradGuard no_grad;
  for (Edit& edit : edits_) edit.bank.index_copy_(0, edit.entries, edit.saved);
  edits_.clear();
  matrices_ = 0;
}

void AppliedKnockout::keep() { edits_.clear(); }

int64_t apply_knockout(ViT& model, const OffsetKnockout& knockout) {
  AppliedKnockout applied(model, knockout);
  const int64_t matrices = applied.matrices();
  applied.keep();
  return matrices;
}

ViT copy_model(const ViT& model) {
  ViT copy(model->config());
  const auto from = model->named_parameters(true);
  if (!from.is_empty()) copy->to(from[0].value().device(), from[0].value().scalar_type());
  at::NoGradGuard no_grad;
  for (const auto& p : copy->named_parameters(true)) {
    const at::Tensor& source = from[p.key()];
    p.value().copy_(source);
    p.value().set_requires_grad(source.requires_grad());
  }
  const auto buffers = model->named_buffers(true);
  for (const auto& b : copy->named_buffers(true)) b.value().copy_(buffers[b.key()]);
  copy->train(model->is_training());
  return copy;
}

ViT knocked_out_copy(const ViT& model, const OffsetKnockout& knockout, int64_t* matrices) {
  ViT copy = copy_model(model);
  const int64_t n = apply_knockout(copy, knockout);
  if (matrices) *matrices = n;
  return copy;
}

}  // namespace translution
