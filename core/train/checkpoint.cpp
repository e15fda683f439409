#include "train/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <ATen/ATen.h>

#include "io/byte_source.h"
#include "io/safetensors_file.h"
#include "nn/model_size.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/key_value.h"

namespace translution {
namespace {

// The "format" metadata value, and the first word of format 1's header line.
const char* kMagic = "translution-checkpoint";
const std::string kOptimizer = "optimizer.", kRng = "training.rng", kCurves = "training.curves";
constexpr int64_t kMaxRngBytes = 1 << 16;
const char* kAdamWFields[] = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
constexpr int64_t kCurveColumns = 7;

std::string metadata_text(const std::map<std::string, std::string>& metadata) {
  std::string out;
  for (const auto& [k, v] : metadata) {
    if (k.find('=') != std::string::npos || k.find('\n') != std::string::npos ||
        v.find('\n') != std::string::npos)
      throw Error("checkpoint metadata '" + k + "' may not contain '=' in its key or a newline");
    out += k + "=" + v + "\n";
  }
  return out;
}

at::Tensor history_tensor(const std::vector<CurvePoint>& history) {
  at::Tensor t = at::empty({int64_t(history.size()), kCurveColumns}, at::kDouble);
  auto a = t.accessor<double, 2>();
  for (size_t i = 0; i < history.size(); ++i) {
    const CurvePoint& p = history[i];
    const double row[kCurveColumns] = {double(p.step), p.epoch,     p.loss,         p.accuracy,
                                       p.lr,           p.test_loss, p.test_accuracy};
    for (int64_t c = 0; c < kCurveColumns; ++c) a[int64_t(i)][c] = row[c];
  }
  return t;
}

// The curves' rows, each at a step the run has taken: a whole number from 0 to its step (a
// step beyond an integer's range, or NaN, has no integer to become).
std::vector<CurvePoint> history_from(const at::Tensor& t, int64_t run_step, const std::string& name) {
  std::vector<CurvePoint> out;
  auto a = t.accessor<double, 2>();
  for (int64_t i = 0; i < t.size(0); ++i) {
    const double step = a[i][0];
    if (!(step >= 0 && step <= double(run_step)) || step != std::floor(step)) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", step);
      throw Error("checkpoint " + name + ": row " + std::to_string(i) + " of '" + kCurves + "' is at step " +
                  text + ", not one of the run's steps 0.." + std::to_string(run_step));
    }
    out.push_back({int64_t(step), a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], a[i][6]});
  }
  return out;
}

NamedTensors checkpoint_tensors(const Checkpoint& c) {
  NamedTensors out;
  for (const auto& p : c.model->named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : c.model->named_buffers()) out.emplace_back(b.key(), b.value());
  if (!c.training) return out;
  const TrainingState& s = *c.training;
  size_t written = 0;
  for (const auto& p : c.model->named_parameters()) {  // in the parameters' order
    const auto it = s.optimizer.find(p.key());
    if (it == s.optimizer.end()) continue;
    const AdamWState& a = it->second;
    out.emplace_back(kOptimizer + p.key() + ".step", at::scalar_tensor(a.step, at::kLong));
    out.emplace_back(kOptimizer + p.key() + ".exp_avg", a.exp_avg);
    out.emplace_back(kOptimizer + p.key() + ".exp_avg_sq", a.exp_avg_sq);
    if (a.max_exp_avg_sq.defined())
      out.emplace_back(kOptimizer + p.key() + ".max_exp_avg_sq", a.max_exp_avg_sq);
    ++written;
  }
  if (written != s.optimizer.size())
    throw Error("checkpoint: the optimizer state names a parameter the model lacks");
  out.emplace_back(kRng, s.rng.defined() ? s.rng : at::empty({0}, at::kByte));
  out.emplace_back(kCurves, history_tensor(s.history));
  return out;
}

std::map<std::string, std::string> checkpoint_metadata(const Checkpoint& c) {
  std::map<std::string, std::string> meta = {{"format", kMagic},
                                             {"format_version", std::to_string(kCheckpointFormat)},
                                             {"config", c.config.to_text()},
                                             {"metadata", metadata_text(c.metadata)}};
  if (c.training) {
    meta["train_config"] = c.training->config.to_text();
    meta["train_step"] = std::to_string(c.training->step);
  }
  return meta;
}

std::string shape_text(at::IntArrayRef sizes) { return std::string(c10::str(sizes)); }

int64_t whole_number(const std::string& text, const std::string& key, const std::string& name) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw Error("checkpoint " + name + ": its " + key + " '" + text + "' is not a whole number");
  return std::stoll(text);
}

const std::string& meta_text(const std::map<std::string, std::string>& meta, const std::string& key,
                             const std::string& name) {
  const auto it = meta.find(key);
  if (it == meta.end())
    throw Error("checkpoint " + name + ": the '" + key + "' entry is missing from its metadata");
  return it->second;
}

// Format 1 began with a text line; its archive is read only by `checkpoint upgrade`.
void refuse_format1(const ByteSource& source) {
  const std::string magic = std::string(kMagic) + " ";
  if (source.size() < magic.size()) return;
  std::string head(magic.size(), '\0');
  source.read(0, head.data(), head.size());
  if (head == magic)
    throw Error(
        source.name() +
        " is a checkpoint of format 1 (a LibTorch archive), which this build opens only to convert it: "
        "run `translution checkpoint upgrade " +
        source.name() + " NEW.ckpt`");
}

// Configs and metadata from the header; the model built empty. `tensor_bytes`, the file's
// tensor buffer, bounds the model before it is built: a config cannot name more weights
// than the file holds (two bytes each at the least), so a small file cannot make a huge model.
Checkpoint checkpoint_from_metadata(const std::map<std::string, std::string>& meta, const std::string& name,
                                    uint64_t tensor_bytes) {
  if (!meta.count("format") || meta.at("format") != kMagic)
    throw Error(name + " is not a Translution checkpoint (its metadata has no format '" + kMagic + "')");
  // Every key known: a damaged key name (the digests' own, say) is named, not ignored.
  for (const auto& [key, unused] : meta)
    if (key != "format" && key != "format_version" && key != "config" && key != "metadata" &&
        key != "train_config" && key != "train_step" && key != "data_md5" && key != "header_md5")
      throw Error("checkpoint " + name + ": its metadata has an unknown entry '" + key + "'");
  const int64_t version = whole_number(meta_text(meta, "format_version", name), "format_version", name);
  if (version > kCheckpointFormat)
    throw Error("checkpoint " + name + " has format " + std::to_string(version) +
                "; this build reads format " + std::to_string(kCheckpointFormat) +
                " (update Translution Studio)");
  if (version != kCheckpointFormat)
    throw Error("checkpoint " + name + ": unsupported format version " + std::to_string(version));
  Checkpoint c;
  try {
    c.config = ViTConfig::from_text(meta_text(meta, "config", name));
  } catch (const Error& e) {
    throw Error("checkpoint " + name + ": its model config is invalid: " + e.what());
  }
  for (const auto& [k, v] :
       parse_key_values(meta_text(meta, "metadata", name), "checkpoint " + name + " metadata"))
    c.metadata[k] = v;
  if (meta.count("train_config")) {
    TrainingState s;
    try {
      s.config = TrainConfig::from_text(meta.at("train_config"));
    } catch (const Error& e) {
      throw Error("checkpoint " + name + ": its training config is invalid: " + e.what());
    }
    s.step = whole_number(meta_text(meta, "train_step", name), "train_step", name);
    if (s.step > s.config.total_steps())
      throw Error("checkpoint " + name + ": step " + std::to_string(s.step) + " is outside the run's " +
                  std::to_string(s.config.total_steps()) + " steps");
    c.training = std::move(s);
  }
  const int64_t parameters = parameter_count(c.config);
  if (uint64_t(parameters) > tensor_bytes / 2)
    throw Error("checkpoint " + name + ": its config names " + std::to_string(parameters) +
                " parameters, more than its " + std::to_string(tensor_bytes) + " bytes of tensors hold");
  c.model = ViT(c.config);
  return c;
}

// What one tensor of the file must be.
struct Expected {
  std::vector<int64_t> shape;  // empty with any_length: a 1-D tensor of any length
  at::ScalarType dtype;
  bool any_rows = false;  // training.curves: any number of rows
  bool any_length = false;
};

std::map<std::string, Expected> expected_tensors(const Checkpoint& c) {
  std::map<std::string, Expected> out;
  for (const auto& p : c.model->named_parameters()) {
    const Expected weight{p.value().sizes().vec(), p.value().scalar_type()};
    out[p.key()] = weight;
    if (!c.training) continue;
    out[kOptimizer + p.key() + ".step"] = {{}, at::kLong};
    for (const char* field : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
      out[kOptimizer + p.key() + "." + field] = weight;
  }
  for (const auto& b : c.model->named_buffers())
    out[b.key()] = {b.value().sizes().vec(), b.value().scalar_type()};
  if (c.training) {
    out[kRng] = {{}, at::kByte, false, true};
    out[kCurves] = {{0, kCurveColumns}, at::kDouble, true};
  }
  return out;
}

// The training state's free-sized tensors, bounded by what a run leaves: a generator's state
// is a few kilobytes, and the curves hold at most a row a step and the final evaluation's.
// Unbounded, a small sparse file could make the reader allocate gigabytes for either.
void check_training_extent(const SafetensorsEntry& e, const Checkpoint& c, const std::string& name) {
  if (e.name == kRng && e.shape[0] > kMaxRngBytes)
    throw Error("checkpoint " + name + ": tensor '" + e.name + "' holds " + std::to_string(e.shape[0]) +
                " bytes; a random-number generator's state has at most " + std::to_string(kMaxRngBytes));
  const int64_t rows = c.training ? c.training->step + 1 : 0;
  if (e.name == kCurves && e.shape[0] > rows)
    throw Error("checkpoint " + name + ": tensor '" + e.name + "' has " + std::to_string(e.shape[0]) +
                " rows, more than a run at step " + std::to_string(rows - 1) + " records");
}

// Every tensor of the header is one the model and its training state have, of the
// right shape and type, and every one they need is there: checked before any data is read.
void check_layout(const SafetensorsHeader& header, const Checkpoint& c, const std::string& name) {
  std::map<std::string, Expected> expected = expected_tensors(c);
  for (const SafetensorsEntry& e : header.entries) {
    const auto it = expected.find(e.name);
    if (it == expected.end())
      throw Error("checkpoint " + name + " holds a tensor '" + e.name + "' that is no part of its model" +
                  (c.training ? "" : " (nor of training state, which its metadata does not declare)"));
    const Expected& x = it->second;
    const bool shape_fits = x.any_length ? e.shape.size() == 1
                            : x.any_rows ? e.shape.size() == 2 && e.shape[1] == x.shape[1]
                                         : e.shape == x.shape;
    if (!shape_fits)
      throw Error("checkpoint " + name + ": tensor '" + e.name + "' has shape " + shape_text(e.shape) +
                  " but the model config needs " + (x.any_length ? "one dimension" : shape_text(x.shape)));
    if (e.dtype != x.dtype)
      throw Error("checkpoint " + name + ": tensor '" + e.name + "' has type " + c10::toString(e.dtype) +
                  ", expected " + c10::toString(x.dtype));
    check_training_extent(e, c, name);
    expected.erase(it);
  }
  for (const auto& [key, x] : expected) {
    if (key.compare(0, kOptimizer.size(), kOptimizer) == 0) continue;  // checked as a whole per parameter
    throw Error("checkpoint " + name + ": tensor '" + key + "' is missing");
  }
}

// Floating-point tensors holding NaN or infinity: refused, or listed where `non_finite` is given.
void check_finite(const NamedTensors& tensors, const std::string& name,
                  std::vector<std::string>* non_finite) {
  for (const auto& [key, t] : tensors) {
    if (key == kCurves) continue;  // NaN there marks a step without evaluation
    const std::string what = non_finite_value(t);
    if (what.empty()) continue;
    if (!non_finite)
      throw Error("checkpoint " + name + ": tensor '" + key + "' holds " + what +
                  " (a damaged file or a diverged run): refused; `translution checkpoint info` lists every "
                  "such tensor");
    non_finite->push_back("'" + key + "' holds " + what);
  }
}

// AdamW's state as AdamW leaves it: a step count no greater than the run's (AdamW steps once
// a training step; near 2^63 the next step would overflow) and second moments that are
// averages of squares, so never negative (their square root would make every update NaN on
// the first resumed step).
void check_adamw_state(const AdamWState& a, int64_t run_step, const std::string& key,
                       const std::string& name) {
  if (a.step < 0 || a.step > run_step)
    throw Error("checkpoint " + name + ": the optimizer step of '" + key + "' is " + std::to_string(a.step) +
                ", outside the run's 0.." + std::to_string(run_step));
  for (const at::Tensor* moment : {&a.exp_avg_sq, &a.max_exp_avg_sq})
    if (moment->defined() && moment->numel() > 0 && moment->min().item<double>() < 0)
      throw Error("checkpoint " + name + ": the optimizer's second moment of '" + key +
                  "' holds negative values (a sum of squares cannot)");
}

void fill_optimizer(TrainingState& s, const ViT& model, std::map<std::string, at::Tensor>& tensors,
                    const std::string& name) {
  for (const auto& p : model->named_parameters()) {
    std::map<std::string, at::Tensor> fields;
    for (const char* field : kAdamWFields) {
      const auto it = tensors.find(kOptimizer + p.key() + "." + field);
      if (it != tensors.end()) fields[field] = it->second;
    }
    if (fields.empty()) continue;
    if (!fields.count("step") || !fields.count("exp_avg") || !fields.count("exp_avg_sq"))
      throw Error("checkpoint " + name + ": the optimizer state of '" + p.key() +
                  "' lacks its step or a moment");
    AdamWState a;
    a.step = fields["step"].item<int64_t>();
    a.exp_avg = fields["exp_avg"];
    a.exp_avg_sq = fields["exp_avg_sq"];
    if (fields.count("max_exp_avg_sq")) a.max_exp_avg_sq = fields["max_exp_avg_sq"];
    check_adamw_state(a, s.step, p.key(), name);
    s.optimizer[p.key()] = std::move(a);
  }
}

Checkpoint read_checkpoint(const ByteSource& source, const c10::Device& device,
                           std::vector<std::string>* non_finite, bool check_values = true) {
  const std::string& name = source.name();
  refuse_format1(source);
  const SafetensorsHeader header = read_safetensors_header(source);
  Checkpoint c = checkpoint_from_metadata(header.metadata, name, header.buffer_bytes);
  check_layout(header, c, name);
  const NamedTensors tensors = read_safetensors_tensors(source, header);
  if (check_values) check_finite(tensors, name, non_finite);
  std::map<std::string, at::Tensor> by_name(tensors.begin(), tensors.end());
  {
    at::NoGradGuard no_grad;
    for (auto& p : c.model->named_parameters()) p.value().copy_(by_name.at(p.key()));
    for (auto& b : c.model->named_buffers()) b.value().copy_(by_name.at(b.key()));
  }
  c.model->to(device);
  if (c.training) {
    fill_optimizer(*c.training, c.model, by_name, name);
    c.training->rng = by_name.at(kRng);
    c.training->history = history_from(by_name.at(kCurves), c.training->step, name);
  }
  return c;
}

}  // namespace

std::string non_finite_value(const at::Tensor& tensor) {
  if (!tensor.defined() || !at::isFloatingType(tensor.scalar_type()) || tensor.numel() == 0) return "";
  if (at::isfinite(tensor).all().item<bool>()) return "";
  return at::isnan(tensor).any().item<bool>() ? "NaN" : "infinity";
}

std::string checkpoint_bytes(const Checkpoint& checkpoint) {
  return safetensors_bytes(checkpoint_tensors(checkpoint), checkpoint_metadata(checkpoint));
}

// An in-memory copy keeps what the original holds, finite or not.
Checkpoint copy_checkpoint(const Checkpoint& checkpoint) {
  const c10::Device device = checkpoint.model->parameters().empty()
                                 ? c10::Device(c10::kCPU)
                                 : checkpoint.model->parameters().front().device();
  const std::string bytes = checkpoint_bytes(checkpoint);
  return read_checkpoint(MemoryBytes(bytes.data(), bytes.size(), "(copy)"), device, nullptr, false);
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const std::string bytes = checkpoint_bytes(checkpoint);
  write_file_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) throw Error("cannot write checkpoint " + path + " (disk full or not writable?)");
  });
}

Checkpoint load_checkpoint(const std::string& path, const c10::Device& device) {
  return read_checkpoint(FileBytes(path), device, nullptr);
}

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& name, const c10::Device& device) {
  return read_checkpoint(MemoryBytes(bytes.data(), bytes.size(), name), device, nullptr);
}

Checkpoint inspect_checkpoint(const std::string& path, std::vector<std::string>* non_finite) {
  return read_checkpoint(FileBytes(path), c10::kCPU, non_finite);
}

}  // namespace translution
