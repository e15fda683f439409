#include "train/checkpoint.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/key_value.h"
#include "util/md5.h"

namespace translution {
namespace {

using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

const char* kMagic = "translution-checkpoint";
constexpr int64_t kCurveColumns = 7;

std::string metadata_text(const std::map<std::string, std::string>& metadata) {
  std::string out;
  for (const auto& [k, v] : metadata) {
    if (k.find('=') != std::string::npos || k.find('\n') != std::string::npos || v.find('\n') != std::string::npos)
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
    const double row[kCurveColumns] = {double(p.step), p.epoch, p.loss, p.accuracy, p.lr, p.test_loss, p.test_accuracy};
    for (int64_t c = 0; c < kCurveColumns; ++c) a[int64_t(i)][c] = row[c];
  }
  return t;
}

std::vector<CurvePoint> history_from(const at::Tensor& t) {
  std::vector<CurvePoint> out;
  const at::Tensor h = t.to(at::kCPU, at::kDouble).contiguous();
  auto a = h.accessor<double, 2>();
  for (int64_t i = 0; i < h.size(0); ++i)
    out.push_back({int64_t(a[i][0]), a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], a[i][6]});
  return out;
}

std::string archive_bytes(const Checkpoint& c) {
  OutputArchive archive;
  archive.write("format_version", c10::IValue(kCheckpointFormat));
  archive.write("config", c10::IValue(c.config.to_text()));
  archive.write("metadata", c10::IValue(metadata_text(c.metadata)));
  OutputArchive weights;
  c.model->save(weights);
  archive.write("weights", weights);
  if (c.training) {
    const TrainingState& s = *c.training;
    archive.write("train_config", c10::IValue(s.config.to_text()));
    archive.write("train_step", c10::IValue(s.step));
    archive.write("optimizer", s.optimizer, true);
    archive.write("rng", s.rng, true);
    archive.write("history", history_tensor(s.history), true);
  }
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

std::string read_string(InputArchive& archive, const std::string& key, const std::string& name) {
  c10::IValue v;
  if (!archive.try_read(key, v) || !v.isString()) throw Error("checkpoint " + name + ": the '" + key + "' entry is missing");
  return v.toStringRef();
}

int64_t read_int(InputArchive& archive, const std::string& key, const std::string& name) {
  c10::IValue v;
  if (!archive.try_read(key, v) || !v.isInt()) throw Error("checkpoint " + name + ": the '" + key + "' entry is missing");
  return v.toInt();
}

at::Tensor read_tensor(InputArchive& archive, const std::string& key, const std::string& name) {
  at::Tensor t;
  if (!archive.try_read(key, t, true)) throw Error("checkpoint " + name + ": the '" + key + "' entry is missing");
  return t;
}

std::string shape_text(at::IntArrayRef sizes) { return std::string(c10::str(sizes)); }

// Reads one parameter or buffer by its dotted module path, checking the shape.
void read_weight(InputArchive& weights, const std::string& path, at::Tensor& target, bool buffer,
                 const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  std::vector<InputArchive> chain(parts.size());
  InputArchive* current = &weights;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!current->try_read(parts[i], chain[i])) throw Error("checkpoint " + name + ": weight '" + path + "' is missing");
    current = &chain[i];
  }
  at::Tensor value;
  if (!current->try_read(parts.back(), value, buffer)) throw Error("checkpoint " + name + ": weight '" + path + "' is missing");
  if (value.sizes() != target.sizes())
    throw Error("checkpoint " + name + ": weight '" + path + "' has shape " + shape_text(value.sizes()) +
                " but the model config needs " + shape_text(target.sizes()));
  if (value.scalar_type() != target.scalar_type())
    throw Error("checkpoint " + name + ": weight '" + path + "' has type " + std::string(c10::toString(value.scalar_type())) +
                ", expected " + c10::toString(target.scalar_type()));
  at::NoGradGuard no_grad;
  target.copy_(value);
}

void read_weights(InputArchive& archive, ViT& model, const std::string& name) {
  InputArchive weights;
  if (!archive.try_read("weights", weights)) throw Error("checkpoint " + name + ": the 'weights' entry is missing");
  for (auto& p : model->named_parameters()) read_weight(weights, p.key(), p.value(), false, name);
  for (auto& b : model->named_buffers()) read_weight(weights, b.key(), b.value(), true, name);
}

// Returns the archive part after checking the header's version, size and checksum.
std::string verified_payload(const std::string& bytes, const std::string& name) {
  const size_t newline = bytes.find('\n');
  const std::string header = bytes.substr(0, std::min(newline, size_t(200)));
  if (bytes.compare(0, std::strlen(kMagic), kMagic) != 0 || newline == std::string::npos)
    throw Error(name + " is not a Translution checkpoint (it does not start with '" + kMagic + "')");
  long long version = 0, size = -1;
  char digest[33] = {0};
  if (std::sscanf(header.c_str(), "translution-checkpoint %lld bytes=%lld md5=%32s", &version, &size, digest) != 3)
    throw Error("checkpoint " + name + ": the header line is damaged ('" + header + "')");
  if (version > kCheckpointFormat)
    throw Error("checkpoint " + name + " has format " + std::to_string(version) + "; this build reads format " +
                std::to_string(kCheckpointFormat) + " and older (update Translution Studio)");
  const std::string payload = bytes.substr(newline + 1);
  if (int64_t(payload.size()) < size)
    throw Error("checkpoint " + name + " is truncated: " + std::to_string(payload.size()) + " of " +
                std::to_string(size) + " bytes present");
  if (int64_t(payload.size()) > size)
    throw Error("checkpoint " + name + " has " + std::to_string(payload.size() - size_t(size)) +
                " unexpected bytes after its end");
  if (md5_hex(payload.data(), payload.size()) != digest)
    throw Error("checkpoint " + name + " is corrupt: its contents do not match the checksum in its header");
  return payload;
}

}  // namespace

std::string checkpoint_bytes(const Checkpoint& checkpoint) {
  const std::string payload = archive_bytes(checkpoint);
  return std::string(kMagic) + " " + std::to_string(kCheckpointFormat) + " bytes=" + std::to_string(payload.size()) +
         " md5=" + md5_hex(payload.data(), payload.size()) + "\n" + payload;
}

Checkpoint copy_checkpoint(const Checkpoint& checkpoint) {
  const c10::Device device = checkpoint.model->parameters().empty() ? c10::Device(c10::kCPU)
                                                                    : checkpoint.model->parameters().front().device();
  return parse_checkpoint(checkpoint_bytes(checkpoint), "(copy)", device);
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open checkpoint " + path + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return parse_checkpoint(bytes.str(), path, device);
}

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& name, const c10::Device& device) {
  const std::string payload = verified_payload(bytes, name);
  InputArchive archive;
  try {
    std::istringstream stream(payload);
    archive.load_from(stream, device);
  } catch (const c10::Error& e) {
    throw Error("checkpoint " + name + " could not be read: " + e.what_without_backtrace());
  }
  Checkpoint c;
  const int64_t version = read_int(archive, "format_version", name);
  if (version != kCheckpointFormat)
    throw Error("checkpoint " + name + ": unsupported format version " + std::to_string(version));
  try {
    c.config = ViTConfig::from_text(read_string(archive, "config", name));
  } catch (const Error& e) {
    throw Error("checkpoint " + name + ": its model config is invalid: " + e.what());
  }
  for (const auto& [k, v] : parse_key_values(read_string(archive, "metadata", name), "checkpoint " + name + " metadata"))
    c.metadata[k] = v;
  c.model = ViT(c.config);
  read_weights(archive, c.model, name);
  c.model->to(device);
  c10::IValue probe;
  if (archive.try_read("train_config", probe)) {
    TrainingState s;
    try {
      s.config = TrainConfig::from_text(read_string(archive, "train_config", name));
    } catch (const Error& e) {
      throw Error("checkpoint " + name + ": its training config is invalid: " + e.what());
    }
    s.step = read_int(archive, "train_step", name);
    s.optimizer = read_tensor(archive, "optimizer", name).to(at::kCPU);
    s.rng = read_tensor(archive, "rng", name).to(at::kCPU);
    s.history = history_from(read_tensor(archive, "history", name));
    if (s.step < 0 || s.step > s.config.total_steps())
      throw Error("checkpoint " + name + ": step " + std::to_string(s.step) + " is outside the run's " +
                  std::to_string(s.config.total_steps()) + " steps");
    c.training = std::move(s);
  }
  return c;
}

}  // namespace translution
