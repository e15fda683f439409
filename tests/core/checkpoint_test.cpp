// Checkpoints: exact round trip, and every kind of damage gets a translution::Error
// (never a crash, never a silently wrong model).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/md5.h"

namespace translution {
namespace {

using test_support::read_bytes;
using test_support::TempDir;
using test_support::write_bytes;

ViTConfig small_config(int64_t dim = 8) {
  ViTConfig c = preset_config("tiny", "translution");
  c.image_height = c.image_width = 24;
  c.patch = 12;
  c.depth = 1;
  c.dim = dim, c.heads = 1, c.head_dim = 8, c.mlp_dim = 8;
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
    s.optimizer = at::arange(17, at::kByte);
    s.rng = at::arange(5, at::kByte);
    s.history = {{2, 0.1, 2.3, 0.1, 1e-3, 2.2, 0.2}};
    c.training = s;
  }
  return c;
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& what) {
  const std::string text(bytes.begin(), bytes.end());
  EXPECT_THROW(parse_checkpoint(text, "x.ckpt", c10::kCPU), Error) << what;
}

TEST(Checkpoint, RoundTripKeepsWeightsConfigMetadataAndState) {
  TempDir dir;
  const Checkpoint saved = small_checkpoint(true);
  save_checkpoint(dir.file("a.ckpt"), saved);
  const Checkpoint loaded = load_checkpoint(dir.file("a.ckpt"));
  EXPECT_EQ(loaded.config, saved.config);
  EXPECT_EQ(loaded.metadata, saved.metadata);
  const auto a = saved.model->named_parameters(), b = loaded.model->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) EXPECT_TRUE(at::equal(p.value(), b[p.key()])) << p.key();
  ASSERT_TRUE(loaded.training.has_value());
  EXPECT_EQ(loaded.training->step, 4);
  EXPECT_EQ(loaded.training->config.to_text(), saved.training->config.to_text());
  EXPECT_TRUE(at::equal(loaded.training->optimizer, saved.training->optimizer));
  ASSERT_EQ(loaded.training->history.size(), 1u);
  EXPECT_DOUBLE_EQ(loaded.training->history[0].test_accuracy, 0.2);
}

TEST(Checkpoint, WeightsOnlyFileHasNoTrainingState) {
  TempDir dir;
  save_checkpoint(dir.file("w.ckpt"), small_checkpoint(false));
  EXPECT_FALSE(load_checkpoint(dir.file("w.ckpt")).training.has_value());
}

TEST(Checkpoint, EveryFlippedByteIsAnError) {
  TempDir dir;
  save_checkpoint(dir.file("a.ckpt"), small_checkpoint(true));
  const std::vector<uint8_t> good = read_bytes(dir.file("a.ckpt"));
  ASSERT_NO_THROW(parse_checkpoint(std::string(good.begin(), good.end()), "a.ckpt", c10::kCPU));
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x5A;
    expect_error(bad, "byte " + std::to_string(i) + " of " + std::to_string(good.size()));
  }
}

TEST(Checkpoint, EveryTruncationIsAnError) {
  TempDir dir;
  save_checkpoint(dir.file("a.ckpt"), small_checkpoint(true));
  const std::vector<uint8_t> good = read_bytes(dir.file("a.ckpt"));
  for (size_t n = 0; n < good.size(); n += (n + 64 < good.size() ? 13 : 1))
    expect_error(std::vector<uint8_t>(good.begin(), good.begin() + long(n)), "first " + std::to_string(n) + " bytes");
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  expect_error(longer, "one byte appended");
}

TEST(Checkpoint, MessagesNameTheProblem) {
  TempDir dir;
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { load_checkpoint(dir.file("missing.ckpt")); }).find("cannot open checkpoint"), std::string::npos);
  write_bytes(dir.file("text.ckpt"), {'h', 'e', 'l', 'l', 'o', '\n'});
  EXPECT_NE(message([&] { load_checkpoint(dir.file("text.ckpt")); }).find("is not a Translution checkpoint"),
            std::string::npos);

  save_checkpoint(dir.file("a.ckpt"), small_checkpoint(false));
  std::vector<uint8_t> bytes = read_bytes(dir.file("a.ckpt"));
  bytes.resize(bytes.size() - 10);
  write_bytes(dir.file("short.ckpt"), bytes);
  EXPECT_NE(message([&] { load_checkpoint(dir.file("short.ckpt")); }).find("truncated"), std::string::npos);

  // A newer format, with a header that is otherwise correct.
  std::vector<uint8_t> good = read_bytes(dir.file("a.ckpt"));
  std::string text(good.begin(), good.end());
  text.replace(0, std::string("translution-checkpoint 1").size(), "translution-checkpoint 9");
  EXPECT_NE(message([&] { parse_checkpoint(text, "new.ckpt", c10::kCPU); }).find("format 9"), std::string::npos);
}

TEST(Checkpoint, WeightsThatDoNotFitTheConfigAreNamed) {
  TempDir dir;
  Checkpoint c = small_checkpoint(false);
  c.model = ViT(small_config(16));  // weights of a wider model under the narrow config
  save_checkpoint(dir.file("mismatch.ckpt"), c);
  try {
    load_checkpoint(dir.file("mismatch.ckpt"));
    FAIL() << "a mismatched checkpoint loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has shape"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mismatch.ckpt"), std::string::npos) << e.what();
  }
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

}  // namespace
}  // namespace translution
