// State dicts of the public Translution code in and out. The fixtures in
// tests/fixtures/pytorch/data were made by running the public code itself
// (tests/fixtures/pytorch/README.md): small ViTs with random weights and their
// logits for one input. Imported, our models must give the same logits.
#include "io/pytorch_interop.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "io/byte_source.h"
#include "io/public_vit_layout.h"
#include "io/state_dict_file.h"
#include "io/state_dict_pickle.h"
#include "io/zip_records.h"
#include "nn/vit.h"
#include "temp_dir.h"
#include "tensor_checks.h"
#include "util/error.h"

using namespace translution;

namespace {

const std::string kFixtures = std::string(TRANSLUTION_SOURCE_ROOT) + "/tests/fixtures/pytorch/data/";

struct Fixture {
  std::string file;   // tests/fixtures/pytorch/data/<file>.pt
  std::string model;  // our operator (the later blocks', for a hybrid)
  std::string first_model = "";
  int64_t heads = 2;
  bool rotary = false;  // the public code's rotary tables are fp32 even when it runs in fp64
  bool mnist = false;   // 28 x 28 in 7 x 7 patches (else 12 x 8 in 4 x 4)
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.file; }

std::vector<Fixture> fixtures() {
  std::vector<Fixture> out = {{"transformer", "attention"}, {"rope_transformer", "rope", "", 2, true}};
  for (const std::string letters : {"qkv", "q", "k", "v", "qk", "qv", "kv"}) {
    out.push_back({"translution_" + letters, letters == "qkv" ? "translution" : "translution-" + letters});
    out.push_back({"lor_translution_" + letters, letters == "qkv" ? "lor" : "lor-" + letters});
  }
  out.push_back({"translution_kv_hybrid", "rope", "translution-kv", 2, true});
  out.push_back({"translution_qkv_one_head", "translution", "", 1});
  out.push_back({"lor_translution_qkv_hybrid", "rope", "lor", 2, true});
  out.push_back({"lor_translution_qkv_one_head", "lor", "", 1});
  // The public rope_translution does not turn q and k in its Translution blocks: translution-v.
  out.push_back({"rope_translution", "translution-v"});
  out.push_back({"rope_translution_hybrid", "rope", "translution-v", 2, true});
  out.push_back({"lor_rope_translution", "lor-rope-translution", "", 2, true});
  out.push_back({"lor_rope_translution_hybrid", "rope", "lor-rope-translution", 2, true});
  out.push_back({"translution_kv_mnist", "translution-kv", "", 2, false, true});
  return out;
}

// The size make_fixtures.py gives every model.
ViTConfig fixture_config(const Fixture& f) {
  ViTConfig c;
  c.model = f.model;
  c.image_height = f.mnist ? 28 : 12;
  c.image_width = f.mnist ? 28 : 8;
  c.patch = f.mnist ? 7 : 4;
  c.channels = 1;
  c.classes = 10;
  c.depth = 2;
  c.dim = 16;
  c.heads = f.heads;
  c.head_dim = f.heads == 1 ? 16 : 8;
  c.mlp_dim = 32;
  c.lor_c1 = c.lor_c2 = 4;
  if (!f.first_model.empty()) {
    c.first_model = f.first_model;
    c.first_blocks = 1;
  }
  return c;
}

const StateDict& expected() {
  static const StateDict e = read_state_dict(kFixtures + "expected.pt");
  return e;
}

at::Tensor expected_tensor(const std::string& key) {
  for (const auto& [k, t] : expected())
    if (k == key) return t;
  throw Error("expected.pt has no " + key);
}

ViT imported(const Fixture& f) {
  const StateDict tensors = read_state_dict(kFixtures + f.file + ".pt");
  ViT model(config_for_state_dict(fixture_config(f), tensors));
  import_public_state_dict(model, tensors, f.file);
  return model;
}

class PublicStateDict : public ::testing::TestWithParam<Fixture> {};

TEST_P(PublicStateDict, ImportedModelGivesThePublicModelsLogits) {
  const Fixture& f = GetParam();
  ViT model = imported(f);
  const at::Tensor input = expected_tensor(f.mnist ? "input28" : "input");
  at::NoGradGuard no_grad;
  const EngineOptions engine;
  EXPECT_LT(
      test_support::max_relative_error(model->forward(engine, input), expected_tensor(f.file + ".logits")),
      1e-5);
  model->to(at::kDouble);
  EXPECT_LT(test_support::max_relative_error(model->forward(engine, input.to(at::kDouble)),
                                             expected_tensor(f.file + ".logits64")),
            f.rotary ? 1e-6 : 1e-10);
}

TEST_P(PublicStateDict, ExportGivesBackTheFileAndReimportTheWeights) {
  const Fixture& f = GetParam();
  const StateDict file = read_state_dict(kFixtures + f.file + ".pt");
  ViT model = imported(f);
  test_support::TempDir dir;
  const std::string path = dir.path().string() + "/out.pt";
  write_state_dict(path, export_public_state_dict(model));
  const StateDict exported = read_state_dict(path);
  std::map<std::string, at::Tensor> by_key(exported.begin(), exported.end());
  for (const auto& [key, tensor] : file) {
    if (!by_key.count(key)) {  // only the unused rotary tables of the public rope_translution
      EXPECT_NE(key.find("rope."), std::string::npos) << key;
      continue;
    }
    const double tolerance = key.find("rope.") != std::string::npos ? 1e-6 : 0.0;  // tables: recomputed
    EXPECT_LE((by_key.at(key) - tensor).abs().max().item<double>(), tolerance) << key;
  }
  std::set<std::string> in_file;
  for (const auto& entry : file) in_file.insert(entry.first);
  for (const auto& entry : exported)
    EXPECT_TRUE(in_file.count(entry.first)) << "exported, not in the public file: " << entry.first;
  ViT again(model->config());  // fresh random weights, then the exported file
  import_public_state_dict(again, exported, path);
  const auto ours = model->named_parameters(), theirs = again->named_parameters();
  for (const auto& p : ours) EXPECT_TRUE(at::equal(p.value(), theirs[p.key()])) << p.key();
}

std::string fixture_name(const ::testing::TestParamInfo<Fixture>& info) { return info.param.file; }

INSTANTIATE_TEST_SUITE_P(PublicCode, PublicStateDict, ::testing::ValuesIn(fixtures()), fixture_name);

// The error's message, or "" when `f` does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PublicStateDictErrors, RefusedFilesAreNamedInOneLine) {
  test_support::TempDir dir;
  const std::string text = dir.path().string() + "/notes.pt";
  std::ofstream(text) << "not an archive";
  for (const auto& [path, says] : std::vector<std::pair<std::string, std::string>>{
           {dir.path().string() + "/absent.pt", "cannot open"},
           {text, "not a PyTorch archive"},
           {kFixtures + "refused_global.pt", "asks for Python's posix.getcwd"},
           {kFixtures + "refused_nested.pt", "'nested' is a"}}) {
    const std::string message = error_of([&, path = path] { read_state_dict(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(says), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// Zero bytes of any size, counting what a reader asks for.
class CountedZeros final : public ByteSource {
 public:
  explicit CountedZeros(uint64_t size) : size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* out, size_t n) const override {
    require_range(*this, offset, n);
    std::memset(out, 0, n);
    read_ += n;
  }
  uint64_t bytes_read() const { return read_; }

 private:
  std::string name_ = "zeros.pt";
  uint64_t size_;
  mutable uint64_t read_ = 0;
};

// The archive reader looks for its directory in the last 64 KB: six gigabytes that hold none
// are refused having read no more.
TEST(PublicStateDictErrors, AFileWithoutAnArchiveDirectoryIsRefusedFromItsTail) {
  const CountedZeros zeros(uint64_t(6) << 30);
  const std::string message = error_of([&] { ZipRecords archive(zeros); });
  EXPECT_EQ(message, "zeros.pt: not a zip archive (no end-of-directory record)");
  EXPECT_LE(zeros.bytes_read(), uint64_t(22 + 65535 + 20));
}

void little_endian(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += char((v >> (8 * i)) & 0xFF);
}

// A zip of stored records (CRCs left 0: only the directory is read here) whose central
// directory points every entry at the first record's bytes where `overlap`, as a crafted
// file would, so that each entry's read copies them again.
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& records, bool overlap) {
  std::string out, directory;
  for (const auto& [name, data] : records) {
    const uint64_t offset = overlap && !directory.empty() ? 0 : out.size();
    if (!overlap || directory.empty()) {
      out += "PK\3\4";
      for (const uint64_t v : {20, 0, 0, 0, 0})
        little_endian(out, v, 2);  // version, flags, stored, time, date
      for (const uint64_t v : {uint64_t(0), uint64_t(data.size()), uint64_t(data.size())})
        little_endian(out, v, 4);
      little_endian(out, name.size(), 2);
      little_endian(out, 0, 2);
      out += name + data;
    }
    directory += "PK\1\2";
    for (const uint64_t v : {20, 20, 0, 0, 0, 0}) little_endian(directory, v, 2);
    for (const uint64_t v : {uint64_t(0), uint64_t(data.size()), uint64_t(data.size())})
      little_endian(directory, v, 4);
    for (const uint64_t v : {uint64_t(name.size()), uint64_t(0), uint64_t(0), uint64_t(0), uint64_t(0)})
      little_endian(directory, v, 2);
    little_endian(directory, 0, 4);
    little_endian(directory, offset, 4);
    directory += name;
  }
  const uint64_t directory_offset = out.size();
  out += directory + "PK\5\6";
  for (const uint64_t v : {uint64_t(0), uint64_t(0), uint64_t(records.size()), uint64_t(records.size())})
    little_endian(out, v, 2);
  little_endian(out, directory.size(), 4);
  little_endian(out, directory_offset, 4);
  little_endian(out, 0, 2);
  return out;
}

// Many entries naming one record's bytes would each be read as storage of its own: a file of
// megabytes could ask for gigabytes. Records that overlap are refused from the directory.
TEST(PublicStateDictErrors, RecordsThatOverlapAreRefusedFromTheDirectory) {
  const std::vector<std::pair<std::string, std::string>> records = {{"archive/data/0", std::string(64, 'x')},
                                                                    {"archive/data/1", std::string(64, 'x')}};
  const std::string apart = stored_zip(records, false), overlapping = stored_zip(records, true);
  const MemoryBytes good(apart.data(), apart.size(), "apart.pt");
  const ZipRecords archive(good);
  EXPECT_TRUE(archive.has("data/0") && archive.has("data/1"));
  const MemoryBytes bad(overlapping.data(), overlapping.size(), "overlap.pt");
  EXPECT_EQ(error_of([&] { ZipRecords crafted(bad); }),
            "overlap.pt: its zip directory lists records that overlap");
  // A record larger than its reader takes (a pickle of names and shapes) is refused unread.
  EXPECT_EQ(error_of([&] { archive.read("data/0", 63); }),
            "apart.pt: record data/0 holds 64 bytes, more than the 63 this reader takes for it");
}

TEST(PublicStateDictErrors, AnotherArchitectureOrSizeNamesTheKeyAndChangesNothing) {
  const Fixture kv{"translution_kv", "translution-kv"};
  const StateDict good = read_state_dict(kFixtures + "translution_kv.pt");
  auto attempt = [&](const ViTConfig& config, const StateDict& tensors) {
    ViT model(config);
    const at::Tensor before = model->named_parameters()["head.weight"].clone();
    const std::string message = error_of([&] { import_public_state_dict(model, tensors, "f.pt"); });
    EXPECT_TRUE(at::equal(before, model->named_parameters()["head.weight"]))
        << "written despite: " << message;
    return message;
  };
  ViTConfig other = fixture_config(kv);
  other.model = "translution";  // the file's q is plain
  EXPECT_NE(attempt(other, good).find("'translution.layers.0.0.to_q.unique_params' is missing"),
            std::string::npos);
  other = fixture_config(kv);
  other.mlp_dim = 24;
  EXPECT_NE(attempt(other, good)
                .find("'translution.layers.0.1.net.1.weight' has shape [32, 16], expected [24, 16]"),
            std::string::npos);
  StateDict extra = good;
  extra.emplace_back("translution.layers.2.0.norm.weight", at::ones({16}));
  EXPECT_NE(attempt(fixture_config(kv), extra).find("'translution.layers.2.0.norm.weight' is not part of"),
            std::string::npos);
  StateDict missing(good.begin() + 1, good.end());
  EXPECT_NE(attempt(fixture_config(kv), missing).find("is missing"), std::string::npos);
  StateDict poisoned = good;
  for (auto& [key, t] : poisoned)
    if (key == "mlp_head.weight") t = t.clone().fill_(NAN);
  EXPECT_NE(attempt(fixture_config(kv), poisoned).find("'mlp_head.weight' holds NaN"), std::string::npos);
  StateDict wrong_table = read_state_dict(kFixtures + "rope_transformer.pt");
  for (auto& [key, t] : wrong_table)
    if (key == "transformer.layers.0.0.rope.cos_cached") t = t.clone() * 0.5;
  ViTConfig rope = fixture_config({"rope_transformer", "rope"});
  rope.position_embedding = true;
  EXPECT_NE(attempt(rope, wrong_table).find("is not the rotary table"), std::string::npos);
}

TEST(PublicStateDictErrors, ModelsWithoutAPublicCounterpartAreRefusedByName) {
  ViTConfig c = fixture_config({"x", "rope-translution"});
  EXPECT_NE(error_of([&] { public_vit_layout(c); }).find("rope_translution builds rotary tables"),
            std::string::npos);
  c = fixture_config({"x", "lor"});
  c.lor_c2 = 6;
  EXPECT_NE(error_of([&] { public_vit_layout(c); }).find("one width"), std::string::npos);
  c = fixture_config({"x", "lor"});
  c.lor_shared = false;
  EXPECT_NE(error_of([&] { public_vit_layout(c); }).find("always has them"), std::string::npos);
  c = fixture_config({"x", "gpsa"});
  EXPECT_NE(error_of([&] { public_vit_layout(c); }).find("no counterpart"), std::string::npos);
  c = fixture_config({"x", "attention", "translution"});
  EXPECT_NE(error_of([&] { public_vit_layout(c); }).find("RoPE attention after"), std::string::npos);
  c = fixture_config({"x", "rope"});
  c.position_embedding = false;
  EXPECT_NE(error_of([&] { public_vit_layout(c); }).find("always add a learned one"), std::string::npos);
}

}  // namespace

namespace {

using namespace std::string_literals;

// A pickle of `ops`, protocol 2, ending with STOP.
std::vector<char> pickle_of(const std::string& ops) {
  std::vector<char> out = {char(0x80), 2};
  out.insert(out.end(), ops.begin(), ops.end());
  out.push_back('.');
  return out;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string u32(uint32_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 4);
}  // little-endian, as pickles

std::vector<char> no_storage(const std::string&) { return std::vector<char>(4096, 0); }

// The limit named, in one line, within seconds: no recursion that the depth could overflow, nothing
// quadratic.
void expect_limit(const std::string& ops, const std::string& says, bool module = false) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<char> pickle = pickle_of(ops);
  const std::string message = error_of([&] {
    if (module)
      unpickle_module(pickle, no_storage);
    else
      unpickle_state_dict(pickle, no_storage);
  });
  EXPECT_NE(message.find(says), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0) << says;
}

// A LibTorch module object whose attribute "a" is what `value_ops` leaves on the stack.
std::string module_with(const std::string& value_ops) {
  return "c__torch__\nModule\n)\x81}(X\1\0\0\0a"s + value_ops + "ub";
}

TEST(PickleLimits, DepthBombsAreRefusedByTheirDepth) {
  // Lists 100,000 and 1,000,000 deep (what made `translution import` overflow its stack).
  for (const size_t n : {size_t(100000), size_t(999000)}) {  // 1,000,000 lists pass the stack's own limit
    expect_limit(repeat("]", n) + repeat("a", n - 1), "nests deeper than 1,000");
    expect_limit(module_with(repeat("]", n) + repeat("a", n - 1)), "nests deeper than 1,000", true);
  }
  expect_limit(")" + repeat("\x85", 5000), "nests deeper than 1,000");  // tuples of tuples
  // 2,000 lists, each appended to the one before only once all exist (a dict's BUILD drops the value it is
  // given, so the stack stays small): when each is appended it is still one level deep, so only the walk over
  // the result sees the nesting. The module is {'a': {}, 'b': list0}, list0 = [list1], list1 = [list2], ...
  std::string late = "}";
  for (uint32_t i = 0; i < 2000; ++i) late += "]r" + u32(i) + "b";
  for (uint32_t i = 0; i + 1 < 2000; ++i) late += "j" + u32(i) + "j" + u32(i + 1) + "ab";
  expect_limit(module_with(late + "X\1\0\0\0b"s + "j" + u32(0)), "nests deeper than 1,000", true);
}

TEST(PickleLimits, SizeBombsAreRefusedByTheLimitTheyPass) {
  expect_limit(repeat("(", 1000001), "grows its stack past 1,000,000");
  expect_limit("]" + repeat("Na", 1000001), "puts in one container more entries than 1,000,000");
  std::string memo = "N";
  for (uint32_t i = 0; i <= 1000000; ++i) memo += "r" + u32(i);
  expect_limit(memo, "memoizes more values than 1,000,000");
  expect_limit("}" + repeat(")b", 2000001), "makes more values than 2,000,000");
  expect_limit("Nq\0"s + repeat("]" + repeat("h\0a"s, 999999), 3),
               "puts in its containers more entries than 2,000,000");
}

// One memoized string used many times is copied each time: 1 MiB named 100 times would yield
// 100 MiB of text from a pickle of 1 MiB.
TEST(PickleLimits, AStringUsedManyTimesIsCountedEachTime) {
  const std::string megabyte =
      "X"s + u32(1 << 20) + std::string(1 << 20, 'x') + "q\0a"s;  // appended, memoized
  expect_limit(module_with("]" + megabyte + repeat("h\0a"s, 99)), "yields names and texts of more bytes than",
               true);
  EXPECT_EQ(error_of([&] {
              unpickle_module(pickle_of(module_with("]" + megabyte + repeat("h\0a"s, 9))), no_storage);
            }),
            "");
}

TEST(PickleLimits, SharedAndCyclicContainersAreRefusedWhereTheyWouldMultiply) {
  // A list that holds itself: walking it would never end.
  const std::vector<char> cyclic = pickle_of(module_with("]q\1h\1a"s));
  EXPECT_NE(error_of([&] { unpickle_module(cyclic, no_storage); }).find("puts one container in two places"),
            std::string::npos);
  // State dicts take no LibTorch module classes at all.
  EXPECT_NE(
      error_of([&] { unpickle_state_dict(cyclic, no_storage); }).find("asks for Python's __torch__.Module"),
      std::string::npos);
}

TEST(PickleLimits, TensorsReachingPastTheirStorageAreRefused) {
  // {'w': _rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', 4), 0, size, stride, False, ())}
  auto tensor = [](const std::string& size_stride) {
    return pickle_of(
        "}X\1\0\0\0wctorch._utils\n_rebuild_tensor_v2\n((X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0"s
        "0X\3\0\0\0cpuK\4tQK\0"s +
        size_stride + "\x89)tRs");
  };
  ASSERT_EQ(error_of([&] { unpickle_state_dict(tensor("(K\2tK\1\x85"), no_storage); }), "");
  const std::string huge = "\x8a\x08\0\0\0\0\0\0\0\x40"s;  // 2^62: the product and the reach overflow 64 bits
  EXPECT_NE(error_of([&] {
              unpickle_state_dict(tensor("(" + huge + huge + "t(K\1K\1t"), no_storage);
            }).find("more elements than storage"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { unpickle_state_dict(tensor("(K\2tK\4\x85"), no_storage); }).find("reaches past the end"),
      std::string::npos);
  const std::string message = error_of([&] {
    unpickle_state_dict(tensor("(K\1tK\1\x85"), [](const std::string&) { return std::vector<char>(2, 0); });
  });
  EXPECT_NE(message.find("not the 4 elements"), std::string::npos) << message;
}

}  // namespace
