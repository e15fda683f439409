#include "train/checkpoint_upgrade.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include <ATen/ATen.h>

#include "io/byte_source.h"
#include "io/state_dict_pickle.h"
#include "io/zip_records.h"
#include "nn/model_size.h"
#include "util/error.h"
#include "util/key_value.h"
#include "util/md5.h"

namespace translution {
namespace {

using Leaves = std::map<std::string, PickledLeaf>;
using Kind = PickledLeaf::Kind;

const char* kMagic = "translution-checkpoint 1 ";
constexpr int64_t kCurveColumns = 7;

// The archive after the header line, once the line's size and checksum are checked
// against the file: a file that is not format 1, or is cut or padded, is refused
// before its payload is read, and the payload is hashed in chunks, never held whole.
SliceBytes verified_payload(const ByteSource& file) {
  const std::string& name = file.name();
  if (file.size() > kMaxFormat1Bytes)
    throw Error(name + " has " + std::to_string(file.size()) +
                " bytes, more than a format-1 checkpoint can have");
  std::string head(size_t(std::min<uint64_t>(file.size(), 201)), '\0');
  file.read(0, head.data(), head.size());
  if (head.compare(0, std::strlen(kMagic), kMagic) != 0)
    throw Error(name + " is not a format-1 checkpoint (it does not start with '" + kMagic +
                "'): nothing to upgrade");
  const size_t newline = head.find('\n');
  long long size = -1;
  char digest[33] = {0};
  if (newline == std::string::npos || newline > 200 ||
      std::sscanf(head.substr(0, newline).c_str(), "translution-checkpoint 1 bytes=%lld md5=%32s", &size,
                  digest) != 2 ||
      size < 0)
    throw Error(name + ": the header line of this format-1 checkpoint is damaged");
  const uint64_t present = file.size() - newline - 1;
  if (present < uint64_t(size))
    throw Error(name + " is truncated: " + std::to_string(present) + " of " + std::to_string(size) +
                " bytes present");
  if (present > uint64_t(size))
    throw Error(name + " has " + std::to_string(present - uint64_t(size)) +
                " unexpected bytes after its end");
  Md5 md5;
  std::vector<char> chunk(size_t(1) << 20);
  for (uint64_t at = newline + 1; at < file.size(); at += chunk.size()) {
    const size_t n = size_t(std::min<uint64_t>(chunk.size(), file.size() - at));
    file.read(at, chunk.data(), n);
    md5.update(chunk.data(), n);
  }
  if (md5.hex_digest() != digest)
    throw Error(name + " is corrupt: its contents do not match the checksum in its header");
  return SliceBytes(file, newline + 1, present);
}

// The leaves of an archive's module pickle by path, its tensors read from the archive's records.
Leaves archive_leaves(const ByteSource& archive) {
  const std::string& name = archive.name();
  const ZipRecords zip(archive);
  std::vector<std::pair<std::string, PickledLeaf>> leaves;
  try {
    leaves = unpickle_module(zip.read("data.pkl", kMaxPickleBytes),
                             [&](const std::string& key) { return zip.read("data/" + key); });
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.compare(0, name.size(), name) == 0 ? what : name + ": " + what);
  }
  Leaves out;
  for (auto& [path, leaf] : leaves)
    if (!out.emplace(path, std::move(leaf)).second)
      throw Error(name + ": the archive names '" + path + "' twice");
  return out;
}

const PickledLeaf& leaf(const Leaves& leaves, const std::string& path, Kind kind, const std::string& name) {
  static const char* kinds[] = {"None", "bool", "int", "float", "string", "tensor"};
  const auto it = leaves.find(path);
  if (it == leaves.end()) throw Error(name + ": the '" + path + "' entry is missing");
  if (it->second.kind != kind) throw Error(name + ": the '" + path + "' entry is not a " + kinds[int(kind)]);
  return it->second;
}

int64_t scalar(const Leaves& leaves, const std::string& path, const std::string& name) {
  const at::Tensor& t = leaf(leaves, path, Kind::Tensor, name).tensor;
  if (t.numel() != 1 || t.scalar_type() != at::kLong)
    throw Error(name + ": the '" + path + "' entry is not one integer");
  return t.item<int64_t>();
}

// A tensor that must be like `like` (shape and type) and finite.
at::Tensor fitting(const Leaves& leaves, const std::string& path, const at::Tensor& like,
                   const std::string& name) {
  const at::Tensor t = leaf(leaves, path, Kind::Tensor, name).tensor;
  if (t.sizes() != like.sizes() || t.scalar_type() != like.scalar_type())
    throw Error(name + ": '" + path + "' is " + c10::toString(t.scalar_type()) + " " + c10::str(t.sizes()) +
                " but the model config needs " + c10::toString(like.scalar_type()) + " " +
                c10::str(like.sizes()));
  if (const std::string what = non_finite_value(t); !what.empty())
    throw Error(name + ": '" + path + "' holds " + what + " (a damaged file or a diverged run): refused");
  return t;
}

void read_weights(const Leaves& leaves, ViT& model, const std::string& name) {
  std::vector<std::pair<std::string, at::Tensor>> targets;
  for (auto& p : model->named_parameters()) targets.emplace_back(p.key(), p.value());
  for (auto& b : model->named_buffers()) targets.emplace_back(b.key(), b.value());
  at::NoGradGuard no_grad;
  for (auto& [key, target] : targets) target.copy_(fitting(leaves, "weights." + key, target, name));
  const size_t expected = targets.size();
  size_t present = 0;
  for (const auto& [path, unused] : leaves) present += path.compare(0, 8, "weights.") == 0;
  if (present != expected)
    throw Error(name + ": its archive holds " + std::to_string(present) +
                " weights where the model config has " + std::to_string(expected));
}

// LibTorch's optimizer.save: "param_groups/0" lists the parameters' state keys in
// the order of model->parameters(), "state.<key>" holds each one's AdamWParamState.
std::map<std::string, AdamWState> adamw_state(const at::Tensor& blob, const ViT& model,
                                              const std::string& path) {
  const std::string name = path + " (its AdamW state)";
  if (blob.scalar_type() != at::kByte || blob.dim() != 1)
    throw Error(name + ": the 'optimizer' entry is not bytes");
  const at::Tensor bytes = blob.contiguous();
  const Leaves leaves = archive_leaves(MemoryBytes(bytes.data_ptr(), size_t(bytes.numel()), name));
  if (const int64_t groups = scalar(leaves, "param_groups.param_groups/size", name); groups != 1)
    throw Error(name + ": it has " + std::to_string(groups) + " parameter groups; a training run has one");
  const std::string group = "param_groups.param_groups/0.";
  const auto params = model->named_parameters();
  if (scalar(leaves, group + "params/size", name) != int64_t(params.size()))
    throw Error(name + ": it is for a model of another number of parameters");
  std::map<std::string, AdamWState> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string prefix =
        "state." + leaf(leaves, group + "params/" + std::to_string(i), Kind::String, name).text + ".";
    if (!leaves.count(prefix + "step")) continue;  // a parameter not stepped yet
    const at::Tensor& p = params[i].value();
    AdamWState a;
    a.step = leaf(leaves, prefix + "step", Kind::Int, name).integer;
    if (a.step < 0) throw Error(name + ": the step of '" + params[i].key() + "' is negative");
    a.exp_avg = fitting(leaves, prefix + "exp_avg", p, name);
    a.exp_avg_sq = fitting(leaves, prefix + "exp_avg_sq", p, name);
    if (const auto max = leaves.find(prefix + "max_exp_avg_sq");
        max != leaves.end() && max->second.kind == Kind::Tensor)
      a.max_exp_avg_sq = fitting(leaves, prefix + "max_exp_avg_sq", p, name);
    out[params[i].key()] = std::move(a);
  }
  return out;
}

TrainingState training_state(const Leaves& leaves, const ViT& model, const std::string& name) {
  TrainingState s;
  try {
    s.config = TrainConfig::from_text(leaf(leaves, "train_config", Kind::String, name).text);
  } catch (const Error& e) {
    throw Error(name + ": its training config is invalid: " + e.what());
  }
  s.step = leaf(leaves, "train_step", Kind::Int, name).integer;
  if (s.step < 0 || s.step > s.config.total_steps())
    throw Error(name + ": step " + std::to_string(s.step) + " is outside the run's " +
                std::to_string(s.config.total_steps()) + " steps");
  s.optimizer = adamw_state(leaf(leaves, "optimizer", Kind::Tensor, name).tensor, model, name);
  s.rng = leaf(leaves, "rng", Kind::Tensor, name).tensor;
  if (s.rng.scalar_type() != at::kByte || s.rng.dim() != 1)
    throw Error(name + ": the 'rng' entry is not bytes");
  const at::Tensor h = leaf(leaves, "history", Kind::Tensor, name).tensor;
  if (h.scalar_type() != at::kDouble || h.dim() != 2 || h.size(1) != kCurveColumns)
    throw Error(name + ": the 'history' entry is not a table of " + std::to_string(kCurveColumns) +
                " columns");
  auto a = h.accessor<double, 2>();
  for (int64_t i = 0; i < h.size(0); ++i)
    s.history.push_back({int64_t(a[i][0]), a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], a[i][6]});
  return s;
}

Checkpoint parse(const ByteSource& file) {
  const std::string& path = file.name();
  const SliceBytes payload = verified_payload(file);
  const Leaves leaves = archive_leaves(payload);
  if (leaf(leaves, "format_version", Kind::Int, path).integer != 1)
    throw Error(path + ": its archive's format_version is not 1");
  Checkpoint c;
  try {
    c.config = ViTConfig::from_text(leaf(leaves, "config", Kind::String, path).text);
  } catch (const Error& e) {
    throw Error(path + ": its model config is invalid: " + e.what());
  }
  for (const auto& [k, v] :
       parse_key_values(leaf(leaves, "metadata", Kind::String, path).text, path + " metadata"))
    c.metadata[k] = v;
  // fp32 weights: a config naming more than the archive's bytes hold is refused before it is built.
  if (const int64_t parameters = parameter_count(c.config); uint64_t(parameters) > payload.size() / 4)
    throw Error(path + ": its config names " + std::to_string(parameters) + " parameters, more than its " +
                std::to_string(payload.size()) + " bytes hold");
  c.model = ViT(c.config);
  read_weights(leaves, c.model, path);
  if (leaves.count("train_config")) c.training = training_state(leaves, c.model, path);
  // What the upgrade returns is what the format-2 reader accepts, bounds on the training state
  // (curves, the generator, optimizer steps) and finite values included: read back to make sure.
  return parse_checkpoint(checkpoint_bytes(c), path, c10::kCPU);
}

}  // namespace

Checkpoint read_format1_checkpoint(const std::string& path) { return parse(FileBytes(path)); }

Checkpoint parse_format1_checkpoint(const std::string& bytes, const std::string& name) {
  return parse(MemoryBytes(bytes.data(), bytes.size(), name));
}

}  // namespace translution
