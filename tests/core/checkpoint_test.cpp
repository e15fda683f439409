// Checkpoints: exact round trip, a file that other safetensors readers read, and
// every kind of damage or hostile header a translution::Error in one line (never a
// crash, never a silently wrong model); format-1 files converted without LibTorch's
// deserializer, to exactly what LibTorch itself reads from them.
#include "train/checkpoint.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>

#include "io/safetensors_file.h"
#include "temp_dir.h"
#include "train/checkpoint_upgrade.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/md5.h"
#include "util/optimizer_state_key.h"

namespace translution {
namespace {

using nlohmann::json;
using test_support::read_bytes;
using test_support::TempDir;
using test_support::write_bytes;

const std::string kFormat1 = std::string(TRANSLUTION_SOURCE_ROOT) + "/tests/fuzz/seeds/format1/";

ViTConfig small_config(int64_t dim = 8) {
  ViTConfig c = preset_config("tiny", "translution");
  c.image_height = c.image_width = 24;
  c.patch = 12;
  c.depth = 1;
  c.dim = dim;
  c.heads = 1;
  c.head_dim = 8;
  c.mlp_dim = 8;
  return c;
}

Checkpoint small_checkpoint(bool with_training) {
  Checkpoint c;
  c.config = small_config();
  c.model = ViT(c.config);
  c.metadata = {{"dataset", "dynamic"}, {"test_accuracy", "0.5"}};
  if (with_training) {
    TrainingState s;
    s.config.steps = 10;
    s.step = 4;
    for (const auto& p : c.model->named_parameters()) {
      AdamWState a{4, at::randn_like(p.value()), at::rand_like(p.value()), {}};
      if (s.optimizer.empty()) a.max_exp_avg_sq = at::rand_like(p.value());  // one as under amsgrad
      s.optimizer[p.key()] = a;
    }
    s.rng = at::arange(5, at::kByte);
    s.history = {{2, 0.1, 2.3, 0.1, 1e-3, 2.2, 0.2}, {4, 0.2, 2.1, 0.2, 1e-3, NAN, NAN}};
    c.training = s;
  }
  return c;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string parse_error(const std::string& bytes) {
  return message_of([&] { parse_checkpoint(bytes, "x.ckpt", c10::kCPU); });
}

// A checkpoint's header and buffer, as a forger would edit them: then the digests recomputed, as a forger
// would.
struct Parts {
  json header;
  std::string buffer;
};

Parts split(const std::string& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | uint8_t(file[size_t(i)]);
  return {json::parse(file.substr(8, n)), file.substr(8 + n)};
}

std::string join(Parts p, bool sign = true) {
  if (sign) {
    p.header["__metadata__"]["data_md5"] = md5_hex(p.buffer.data(), p.buffer.size());
    p.header["__metadata__"].erase("header_md5");
    const std::string unsigned_text = p.header.dump();
    p.header["__metadata__"]["header_md5"] = md5_hex(unsigned_text.data(), unsigned_text.size());
  }
  const std::string text = p.header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((text.size() >> (8 * i)) & 0xff);
  return out + text + p.buffer;
}

// The header's model config with `key`'s line set to `value`.
std::string with_line(const json& header, const std::string& key, const std::string& value) {
  std::istringstream in(header["__metadata__"]["config"].get<std::string>());
  std::string out, line;
  while (std::getline(in, line)) out += (line.rfind(key + "=", 0) == 0 ? key + "=" + value : line) + "\n";
  return out;
}

std::string with_header_text(const std::string& text, const std::string& buffer = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  return out + text + buffer;
}

void expect_same(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.metadata, b.metadata);
  const auto pa = a.model->named_parameters(), pb = b.model->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) EXPECT_TRUE(at::equal(p.value(), pb[p.key()])) << p.key();
  ASSERT_EQ(a.training.has_value(), b.training.has_value());
  if (!a.training) return;
  const TrainingState &s = *a.training, &t = *b.training;
  EXPECT_EQ(s.step, t.step);
  EXPECT_EQ(s.config.to_text(), t.config.to_text());
  EXPECT_TRUE(at::equal(s.rng, t.rng));
  ASSERT_EQ(s.optimizer.size(), t.optimizer.size());
  for (const auto& [key, x] : s.optimizer) {
    const AdamWState& y = t.optimizer.at(key);
    EXPECT_EQ(x.step, y.step) << key;
    EXPECT_TRUE(at::equal(x.exp_avg, y.exp_avg)) << key;
    EXPECT_TRUE(at::equal(x.exp_avg_sq, y.exp_avg_sq)) << key;
    ASSERT_EQ(x.max_exp_avg_sq.defined(), y.max_exp_avg_sq.defined()) << key;
    if (x.max_exp_avg_sq.defined()) {
      EXPECT_TRUE(at::equal(x.max_exp_avg_sq, y.max_exp_avg_sq)) << key;
    }
  }
  ASSERT_EQ(s.history.size(), t.history.size());
  for (size_t i = 0; i < s.history.size(); ++i) {
    EXPECT_EQ(s.history[i].step, t.history[i].step);
    EXPECT_EQ(std::isnan(s.history[i].test_loss), std::isnan(t.history[i].test_loss));
    if (!std::isnan(s.history[i].test_loss)) {
      EXPECT_EQ(s.history[i].test_loss, t.history[i].test_loss);
    }
  }
}

TEST(Checkpoint, RoundTripKeepsWeightsConfigMetadataAndTrainingStateExactly) {
  TempDir dir;
  const Checkpoint saved = small_checkpoint(true);
  save_checkpoint(dir.file("a.ckpt"), saved);
  expect_same(saved, load_checkpoint(dir.file("a.ckpt")));
}

TEST(Checkpoint, WeightsOnlyFileHasNoTrainingState) {
  TempDir dir;
  save_checkpoint(dir.file("w.ckpt"), small_checkpoint(false));
  EXPECT_FALSE(load_checkpoint(dir.file("w.ckpt")).training.has_value());
}

// A reader written from the safetensors format's description alone, not the project's: every tensor's bytes.
TEST(Checkpoint, AnIndependentSafetensorsReaderFindsEveryTensor) {
  const Checkpoint c = small_checkpoint(true);
  const std::string file = checkpoint_bytes(c);
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  const json header = json::parse(file.substr(8, n));
  const std::string buffer = file.substr(8 + n);
  std::map<std::string, at::Tensor> expected;
  for (const auto& p : c.model->named_parameters()) expected[p.key()] = p.value();
  for (const auto& [key, a] : c.training->optimizer) {
    expected["optimizer." + key + ".exp_avg"] = a.exp_avg;
    expected["optimizer." + key + ".exp_avg_sq"] = a.exp_avg_sq;
    expected["optimizer." + key + ".step"] = at::scalar_tensor(a.step, at::kLong);
  }
  expected["training.rng"] = c.training->rng;
  size_t found = 0;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__" || !expected.count(key)) continue;
    const at::Tensor& t = expected.at(key);
    const std::vector<int64_t> shape = value["shape"];
    EXPECT_EQ(shape, t.sizes().vec()) << key;
    EXPECT_EQ(value["dtype"], t.scalar_type() == at::kFloat  ? "F32"
                              : t.scalar_type() == at::kLong ? "I64"
                                                             : "U8")
        << key;
    const uint64_t begin = value["data_offsets"][0], end = value["data_offsets"][1];
    ASSERT_EQ(end - begin, t.nbytes()) << key;
    EXPECT_EQ(std::memcmp(buffer.data() + begin, t.contiguous().data_ptr(), t.nbytes()), 0) << key;
    ++found;
  }
  EXPECT_EQ(found, expected.size());
  EXPECT_EQ(header["__metadata__"]["format"], "translution-checkpoint");
  EXPECT_EQ(header["__metadata__"]["config"], c.config.to_text());
  EXPECT_EQ((8 + n) % 8, 0u);  // the buffer starts aligned, as the safetensors library writes it
}

TEST(Checkpoint, EveryFlippedByteIsAnError) {
  const std::string good = checkpoint_bytes(small_checkpoint(true));
  ASSERT_NO_THROW(parse_checkpoint(good, "a.ckpt", c10::kCPU));
  for (size_t i = 0; i < good.size(); i += (i < 4096 ? 1 : 7)) {
    std::string bad = good;
    bad[i] ^= 0x5A;
    EXPECT_THROW(parse_checkpoint(bad, "x.ckpt", c10::kCPU), Error) << "byte " << i << " of " << good.size();
  }
}

TEST(Checkpoint, EveryTruncationIsAnError) {
  const std::string good = checkpoint_bytes(small_checkpoint(true));
  for (size_t n = 0; n < good.size(); n += (n + 64 < good.size() ? 13 : 1))
    EXPECT_THROW(parse_checkpoint(good.substr(0, n), "x.ckpt", c10::kCPU), Error)
        << "first " << n << " bytes";
  EXPECT_THROW(parse_checkpoint(good + '\0', "x.ckpt", c10::kCPU), Error) << "one byte appended";
}

TEST(Checkpoint, MessagesNameTheProblemInOneLine) {
  TempDir dir;
  const std::string good = checkpoint_bytes(small_checkpoint(false));
  const std::string corrupt_data = good.substr(0, good.size() - 1) + char(good.back() ^ 1);
  std::string corrupt_header = good;
  corrupt_header[corrupt_header.find("dynamic")] = 'D';
  Parts newer = split(good);
  newer.header["__metadata__"]["format_version"] = "9";
  Parts plain = split(good);
  plain.header["__metadata__"].erase("format");
  Parts stray = split(good);
  stray.header["__metadata__"]["Header_md5"] = "0";
  std::ofstream(dir.file("text.ckpt")) << "hello\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {message_of([&] { load_checkpoint(dir.file("missing.ckpt")); }), "cannot open"},
      {message_of([&] { load_checkpoint(dir.path().string()); }), "is not a regular file"},
      {message_of([&] { load_checkpoint(dir.file("text.ckpt")); }), "too short"},
      {parse_error(good.substr(0, good.size() - 10)), "is truncated"},
      {parse_error(corrupt_data), "tensors' bytes do not match the data_md5"},
      {parse_error(corrupt_header), "header does not match the header_md5"},
      {parse_error(join(newer)), "has format 9"},
      {parse_error(join(plain)), "is not a Translution checkpoint"},
      {parse_error(join(stray)), "unknown entry 'Header_md5'"},
  };
  for (const auto& [message, says] : cases) {
    EXPECT_NE(message.find(says), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// `text` `n` times, separated by commas.
std::string repeated(const std::string& text, uint64_t n) {
  std::string out;
  for (uint64_t i = 0; i < n; ++i) out += (i ? "," : "") + text;
  return out;
}

// A JSON object of `n` distinct keys, each holding `value`.
std::string many_entries(uint64_t n, const std::string& value) {
  std::string out = "{";
  for (uint64_t i = 0; i < n; ++i) out += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + value;
  return out + "}";
}

TEST(Checkpoint, HostileHeadersAreRefusedBeforeAnythingIsRead) {
  const std::string good = checkpoint_bytes(small_checkpoint(false));
  auto edited = [&](const std::function<void(json&)>& edit) {
    Parts p = split(good);
    edit(p.header);
    return parse_error(join(p));
  };
  const std::string first = "head.weight";
  auto bomb = [&](uint64_t n) {
    std::string b = good;
    for (int i = 0; i < 8; ++i) b[size_t(i)] = char((n >> (8 * i)) & 0xff);
    return parse_error(b);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {bomb(~uint64_t(0)), "more than the 16 MB a header may have"},
      {bomb(uint64_t(16) << 20 | 1), "more than the 16 MB"},
      {bomb(good.size()), "is truncated: its header length says"},
      {parse_error(with_header_text("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}")),
       "nests deeper than 64"},
      {parse_error(with_header_text(std::string(1000000, '[') + std::string(1000000, ']'))),
       "is not a JSON object"},
      {parse_error(with_header_text("{\"a\":" + std::string(1000000, '{'))), "nests deeper than 64"},
      {parse_error(with_header_text("{\"a\": [1, 2")), "not valid JSON"},
      // Structure a parse would blow up ({} is two bytes and a map): bounded by the entries.
      {parse_error(with_header_text(many_entries(kMaxSafetensorsTensors + 2, "{}"))),
       "lists 131074 entries, more than the 131072 tensors"},
      {parse_error(with_header_text("{\"a\":[" + repeated("{}", 1000) + "]}")),
       "more objects, arrays or fields than its 1 entries need"},
      {parse_error(with_header_text("{\"__metadata__\":" + many_entries(5000, "\"\"") + "}")),
       "more objects, arrays or fields than its 1 entries need"},
      {parse_error(with_header_text("{\"a\":{\"shape\":[\"\",\"\"]}}")), "holds a list with text in it"},
      {parse_error(with_header_text("{\"a\":{\"shape\":[" + repeated("1", 100) + "]}}")),
       "more objects, arrays or fields"},
      {edited([&](json& h) { h[first]["dtype"] = "F8_E4M3"; }), "which this engine does not read"},
      {edited([&](json& h) { h[first]["dtype"] = 7; }), "which this engine does not read"},
      {edited([&](json& h) {
         h[first]["shape"] = {uint64_t(1) << 62, uint64_t(1) << 62};
       }),
       "overflows a 64-bit size"},
      {edited([&](json& h) {
         h[first]["shape"] = {-1, 4};
       }),
       "is not a non-negative integer"},
      {edited([&](json& h) { h[first]["shape"] = std::vector<int>(40, 1); }), "at most 32 sizes"},
      {edited([&](json& h) { h[first]["extra"] = 1; }), "unknown field 'extra'"},
      {edited([&](json& h) {
         h[first]["data_offsets"] = {4, 0};
       }),
       "ends before it begins"},
      {edited([&](json& h) { h["copy"] = h[first]; }), "overlaps"},
      {edited([&](json& h) { h.erase(first); }), "belong to no tensor"},
      {edited([&](json& h) { h["__metadata__"]["config"] = 5; }), "metadata 'config' is not a string"},
      {edited([&](json& h) { h["__metadata__"]["train_config"] = "steps=10\n"; }),
       "'train_step' entry is missing"},
      {edited([&](json& h) { h["__metadata__"]["format_version"] = "2x"; }), "is not a whole number"},
      // A config is bounded before a model is built: no more blocks than a model may have,
      // no more weights than the file's tensors hold (a small file naming a huge model).
      {edited([&](json& h) { h["__metadata__"]["config"] = with_line(h, "depth", "1000000000000000"); }),
       "depth 1000000000000000 is more than the 1024 blocks"},
      {edited([&](json& h) { h["__metadata__"]["config"] = with_line(h, "depth", "1000"); }),
       "parameters, more than its"},
      {edited([&](json& h) { h["__metadata__"]["config"] = with_line(h, "dim", "1000000"); }),
       "parameters, more than its"},
  };
  for (const auto& [message, says] : cases) {
    EXPECT_NE(message.find(says), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Checkpoint, TensorsThatDoNotFitTheModelAreNamed) {
  Checkpoint c = small_checkpoint(false);
  c.model = ViT(small_config(16));  // weights of a wider model under the narrow config
  std::string message = parse_error(checkpoint_bytes(c));
  EXPECT_NE(message.find("has shape"), std::string::npos) << message;
  EXPECT_NE(message.find("x.ckpt"), std::string::npos) << message;
  Parts p = split(checkpoint_bytes(small_checkpoint(false)));
  p.header["stray"] = {{"dtype", "U8"}, {"shape", {0}}, {"data_offsets", {0, 0}}};
  message = parse_error(join(p));
  EXPECT_NE(message.find("'stray' that is no part of its model"), std::string::npos) << message;
  p = split(checkpoint_bytes(small_checkpoint(true)));  // the curves, the last tensor, left out
  p.buffer.resize(p.buffer.size() - p.header["training.curves"]["data_offsets"][1].get<size_t>() +
                  p.header["training.curves"]["data_offsets"][0].get<size_t>());
  p.header.erase("training.curves");
  message = parse_error(join(p));
  EXPECT_NE(message.find("tensor 'training.curves' is missing"), std::string::npos) << message;
}

TEST(Checkpoint, NonFiniteTensorsAreRefusedByNameAndListedForInspection) {
  TempDir dir;
  for (const std::string& poison :
       std::vector<std::string>{"head.weight", "optimizer.head.weight.exp_avg_sq"}) {
    Checkpoint c = small_checkpoint(true);
    at::Tensor target = poison == "head.weight" ? c.model->named_parameters()["head.weight"]
                                                : c.training->optimizer.at("head.weight").exp_avg_sq;
    {
      at::NoGradGuard no_grad;
      target.view(-1)[0] = NAN;
    }
    save_checkpoint(dir.file("nan.ckpt"), c);
    const std::string message = message_of([&] { load_checkpoint(dir.file("nan.ckpt")); });
    EXPECT_NE(message.find("tensor '" + poison + "' holds NaN"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    std::vector<std::string> listed;
    EXPECT_NO_THROW(inspect_checkpoint(dir.file("nan.ckpt"), &listed));
    EXPECT_EQ(listed, std::vector<std::string>{"'" + poison + "' holds NaN"});
  }
  Checkpoint c = small_checkpoint(false);
  {
    at::NoGradGuard no_grad;
    c.model->named_parameters()["head.bias"].fill_(INFINITY);
  }
  EXPECT_NE(parse_error(checkpoint_bytes(c)).find("'head.bias' holds infinity"), std::string::npos);
}

// Optimizer state no AdamW run can leave is refused on loading, not found out as NaN weights
// after the resumed run's first step.
TEST(Checkpoint, ImpossibleOptimizerStateIsRefused) {
  Checkpoint c = small_checkpoint(true);
  EXPECT_EQ(parse_error(checkpoint_bytes(c)), "no error");
  c.training->optimizer.at("head.weight").exp_avg_sq.view(-1)[0] = -1e-3;
  std::string message = parse_error(checkpoint_bytes(c));
  EXPECT_NE(message.find("second moment of 'head.weight' holds negative values"), std::string::npos)
      << message;
  c = small_checkpoint(true);
  for (auto& [key, a] : c.training->optimizer)
    if (a.max_exp_avg_sq.defined()) a.max_exp_avg_sq.view(-1)[0] = -1;  // the one as under amsgrad
  EXPECT_NE(parse_error(checkpoint_bytes(c)).find("holds negative values"), std::string::npos);
  // The free-sized training tensors are bounded by what a run leaves (a sparse file claiming
  // gigabytes of either was read whole).
  c = small_checkpoint(true);
  c.training->rng = at::zeros({(1 << 16) + 1}, at::kByte);
  EXPECT_NE(parse_error(checkpoint_bytes(c)).find("has at most 65536"), std::string::npos);
  c = small_checkpoint(true);
  c.training->history.resize(6, c.training->history.back());
  message = parse_error(checkpoint_bytes(c));
  EXPECT_NE(message.find("has 6 rows, more than a run at step 4 records"), std::string::npos) << message;
  c = small_checkpoint(true);
  c.training->history.back().step = 5;  // beyond the run's step 4
  message = parse_error(checkpoint_bytes(c));
  EXPECT_NE(message.find("is at step 5, not one of the run's steps 0..4"), std::string::npos) << message;
  // A step no integer holds (NaN, 1e300) is refused, not converted.
  for (const double step : {std::nan(""), 1e300, 2.5}) {
    Parts p = split(checkpoint_bytes(small_checkpoint(true)));
    const size_t at = p.header["training.curves"]["data_offsets"][0].get<size_t>();
    std::memcpy(&p.buffer[at], &step, sizeof step);  // row 0, the step column
    message = parse_error(join(p));
    EXPECT_NE(message.find("row 0 of 'training.curves' is at step"), std::string::npos) << message;
  }
  c = small_checkpoint(true);
  c.training->optimizer.at("head.bias").step = int64_t(1) << 62;
  message = parse_error(checkpoint_bytes(c));
  EXPECT_NE(message.find("optimizer step of 'head.bias' is 4611686018427387904, outside the run's 0..4"),
            std::string::npos)
      << message;
}

// A run whose weights turn non-finite without its loss doing so first (here: poisoned by hand) is never
// saved, and a run that stops on them never calls them "the last good state".
TEST(Checkpoint, ATrainingStateThatIsNotFiniteIsNeverSaved) {
  ASSERT_FALSE(test_support::mnist_dir().empty()) << "TRANSLUTION_DATA is not set";
  TempDir dir;
  TrainConfig run;
  run.dataset = "dynamic";
  run.train_samples = 32;
  run.batch = 16;
  run.steps = 4;
  run.eval_samples = 16;
  ViTConfig model = small_config();
  model.image_height = model.image_width = 28;
  model.patch = 14;
  Trainer trainer(EngineOptions{}, model, run, test_support::mnist_dir(), c10::kCPU);
  trainer.set_checkpoint_path(dir.file("run.ckpt"));
  {
    at::NoGradGuard no_grad;
    trainer.model()->named_parameters()["head.weight"].view(-1)[3] = NAN;
  }
  const std::string refused = message_of([&] { trainer.write_checkpoint(); });
  EXPECT_NE(refused.find("is not finite ('head.weight' holds NaN)"), std::string::npos) << refused;
  std::string message;
  EXPECT_EQ(trainer.run([&](const TrainProgress& p) {
    if (p.event == TrainProgress::Event::Diverged) message = p.message;
  }),
            TrainProgress::Event::Diverged);
  EXPECT_NE(message.find("not finite"), std::string::npos) << message;
  EXPECT_EQ(message.find("last good state"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run.ckpt")));
}

TEST(Checkpoint, SavingReplacesTheFileAtomically) {
  TempDir dir;
  save_checkpoint(dir.file("a.ckpt"), small_checkpoint(false));
  save_checkpoint(dir.file("a.ckpt"), small_checkpoint(true));
  EXPECT_TRUE(load_checkpoint(dir.file("a.ckpt")).training.has_value());
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);  // no temporary left behind
}

TEST(CheckpointUpgrade, FormatOneIsOpenedOnlyToConvertIt) {
  const std::string path = kFormat1 + "attention-weights.ckpt";
  const std::string message = message_of([&] { load_checkpoint(path); });
  EXPECT_NE(message.find("run `translution checkpoint upgrade " + path), std::string::npos) << message;
  TempDir dir;
  save_checkpoint(dir.file("new.ckpt"), small_checkpoint(false));
  EXPECT_NE(message_of([&] { read_format1_checkpoint(dir.file("new.ckpt")); }).find("nothing to upgrade"),
            std::string::npos);
}

// The path's tensor from a LibTorch archive of modules, read by LibTorch itself (a trusted fixture, never a
// user's file).
at::Tensor libtorch_weight(torch::serialize::InputArchive& weights, const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  std::vector<torch::serialize::InputArchive> chain(parts.size());
  torch::serialize::InputArchive* current = &weights;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    EXPECT_TRUE(current->try_read(parts[i], chain[i])) << path;
    current = &chain[i];
  }
  at::Tensor value;
  EXPECT_TRUE(current->try_read(parts.back(), value)) << path;
  return value;
}

TEST(CheckpointUpgrade, ReadsExactlyWhatLibTorchReadsFromTheArchive) {
  const std::string path = kFormat1 + "lor-with-training-state.ckpt";
  const Checkpoint upgraded = read_format1_checkpoint(path);
  ASSERT_TRUE(upgraded.training.has_value());
  const std::vector<uint8_t> bytes = read_bytes(path);
  std::istringstream payload(std::string(std::find(bytes.begin(), bytes.end(), '\n') + 1, bytes.end()));
  torch::serialize::InputArchive archive, weights;
  archive.load_from(payload);
  ASSERT_TRUE(archive.try_read("weights", weights));
  for (const auto& p : upgraded.model->named_parameters())
    EXPECT_TRUE(at::equal(p.value(), libtorch_weight(weights, p.key()))) << p.key();
  at::Tensor blob;
  ASSERT_TRUE(archive.try_read("optimizer", blob, true));
  std::istringstream blob_bytes(std::string(static_cast<const char*>(blob.data_ptr()), size_t(blob.numel())));
  torch::serialize::InputArchive optimizer_archive;
  optimizer_archive.load_from(blob_bytes);
  torch::optim::AdamW reference(upgraded.model->parameters(), torch::optim::AdamWOptions(1e-3));
  reference.load(optimizer_archive);
  auto& state = reference.state();
  ASSERT_EQ(state.size(), upgraded.training->optimizer.size());
  for (const auto& p : upgraded.model->named_parameters()) {
    const auto found = state.find(optimizer_state_key<std::decay_t<decltype(state)>>(p.value()));
    ASSERT_NE(found, state.end()) << p.key();
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*found->second);
    const AdamWState& ours = upgraded.training->optimizer.at(p.key());
    EXPECT_EQ(ours.step, s.step()) << p.key();
    EXPECT_TRUE(at::equal(ours.exp_avg, s.exp_avg())) << p.key();
    EXPECT_TRUE(at::equal(ours.exp_avg_sq, s.exp_avg_sq())) << p.key();
  }
  at::Tensor rng;
  ASSERT_TRUE(archive.try_read("rng", rng, true));
  EXPECT_TRUE(at::equal(rng, upgraded.training->rng));
  // Saved in the current format and loaded again, nothing changes.
  TempDir dir;
  save_checkpoint(dir.file("new.ckpt"), upgraded);
  expect_same(upgraded, load_checkpoint(dir.file("new.ckpt")));
}

TEST(CheckpointUpgrade, DamagedOrHostileArchivesAreRefusedInOneLine) {
  TempDir dir;
  const std::vector<uint8_t> good = read_bytes(kFormat1 + "attention-weights.ckpt");
  std::vector<uint8_t> bad = good;
  bad[bad.size() / 2] ^= 1;
  write_bytes(dir.file("flipped.ckpt"), bad);
  write_bytes(dir.file("short.ckpt"), std::vector<uint8_t>(good.begin(), good.end() - 5));
  for (const auto& [file, says] : std::vector<std::pair<std::string, std::string>>{
           {"flipped.ckpt", "do not match the checksum"}, {"short.ckpt", "is truncated"}}) {
    const std::string message = message_of([&, file = file] { read_format1_checkpoint(dir.file(file)); });
    EXPECT_NE(message.find(says), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace translution
