// Refusing what will not fit (train/memory_guard.h), with the available memory
// set by $TRANSLUTION_AVAILABLE_MEMORY, and reading a checkpoint's configs
// without loading it (train/checkpoint_peek.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "temp_dir.h"
#include "train/checkpoint.h"
#include "train/checkpoint_peek.h"
#include "train/memory_guard.h"
#include "util/error.h"

namespace translution {
namespace {

// Sets the override for one test.
class AvailableBytes {
 public:
  explicit AvailableBytes(const std::string& bytes) { ::setenv("TRANSLUTION_AVAILABLE_MEMORY", bytes.c_str(), 1); }
  ~AvailableBytes() { ::unsetenv("TRANSLUTION_AVAILABLE_MEMORY"); }
};

MemoryPlan translution_a7(int64_t batch) {
  MemoryPlan plan;
  plan.config = preset_config("A", "translution");
  plan.config.patch = 7;
  plan.training = true;
  plan.batch = batch;
  plan.batch_option = "--batch";
  plan.recompute_option = "--recompute";
  plan.model_option = "--model";
  plan.override_hint = "--force runs it anyway";
  return plan;
}

TEST(MemoryGuard, RefusesWhatWillNotFitInOneLineWithWhatWould) {
  const AvailableBytes available("24000000000");
  const MemoryCheck check = check_memory(translution_a7(128), c10::kCPU);
  ASSERT_FALSE(check.fits);
  const std::string& why = check.refusal;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_EQ(why.rfind("training translution ViT-A/7 (84x84) at batch 128 on cpu needs ~", 0), 0u) << why;
  EXPECT_NE(why.find("but 24.0 GB is available (TRANSLUTION_AVAILABLE_MEMORY)"), std::string::npos) << why;
  for (const char* part : {"weights 1.4 GB", "gradients", "AdamW 2.8 GB", "activations"})
    EXPECT_NE(why.find(part), std::string::npos) << part << ": " << why;
  // What fits: a smaller batch, --recompute, LoR, in that order, then how to insist.
  const size_t batch = why.find(": --batch "), recompute = why.find("--recompute"), lor = why.find("--model lor");
  EXPECT_NE(batch, std::string::npos) << why;
  EXPECT_LT(batch, recompute) << why;
  EXPECT_LT(recompute, lor) << why;
  EXPECT_NE(why.find("; --force runs it anyway"), std::string::npos) << why;
  EXPECT_THROW(require_memory(translution_a7(128), c10::kCPU), Error);
}

TEST(MemoryGuard, TheBatchItSuggestsFitsAndTheNextDoesNot) {
  const AvailableBytes available("24000000000");
  const std::string why = check_memory(translution_a7(128), c10::kCPU).refusal;
  const int64_t batch = std::atoll(why.c_str() + why.find(": --batch ") + 10);
  ASSERT_GT(batch, 0) << why;
  EXPECT_TRUE(check_memory(translution_a7(batch), c10::kCPU).fits);
  EXPECT_FALSE(check_memory(translution_a7(batch + 1), c10::kCPU).fits);
}

TEST(MemoryGuard, WhatFitsIsNotRefused) {
  const AvailableBytes available("24000000000");
  MemoryPlan plan = translution_a7(1);
  plan.config.patch = 12;
  const MemoryCheck check = check_memory(plan, c10::kCPU);
  EXPECT_TRUE(check.fits);
  EXPECT_TRUE(check.refusal.empty());
  EXPECT_EQ(check.summary.rfind("needs ~", 0), 0u);
  EXPECT_NE(check.summary.find(" of 24.0 GB available"), std::string::npos) << check.summary;
  EXPECT_NO_THROW(require_memory(plan, c10::kCPU));
}

TEST(MemoryGuard, EvenOneImageTooManyNamesWhatItNeeds) {
  const AvailableBytes available("1000000");  // 1 MB
  MemoryPlan plan = translution_a7(1);
  plan.training = false;
  plan.batch_option = plan.model_option = "";
  const std::string why = check_memory(plan, c10::kCPU).refusal;
  EXPECT_NE(why.find("even one image needs ~1.4 GB: a smaller model or image"), std::string::npos) << why;
}

// `translution predict` of a 465 MB Translution ViT-A/12 checkpoint peaked at 2.96 GB resident:
// reading the file, not running the model, is what has to fit.
TEST(MemoryGuard, ReadingACheckpointCountsItsCopies) {
  const AvailableBytes available("2000000000");
  CheckpointPeek peek;
  peek.config = preset_config("A", "translution");
  peek.file_bytes = 464715855;
  const MemoryCheck check = check_memory(checkpoint_plan(peek, 1), c10::kCPU);
  EXPECT_FALSE(check.fits);
  EXPECT_NEAR(check.needed / 1e6, 2960 - 180, 0.25 * 2960);
  EXPECT_NE(check.refusal.find("reading the checkpoint alone needs ~3.0 GB"), std::string::npos) << check.refusal;
}

TEST(MemoryGuard, AnOverrideThatIsNotANumberIsAnError) {
  const AvailableBytes available("lots");
  EXPECT_THROW(check_memory(translution_a7(1), c10::kCPU), Error);
}

TEST(MemoryGuard, TheMachinesOwnFigureIsKnownOnLinux) {
  const AvailableMemory a = available_memory(c10::kCPU);
  EXPECT_GT(a.bytes, 0);
  EXPECT_EQ(a.source, "MemAvailable");
}

TEST(CheckpointPeek, ReadsTheConfigsWithoutLoadingTheWeights) {
  const test_support::TempDir dir;
  Checkpoint c;
  c.config = preset_config("tiny", "lor");
  c.config.depth = 2;
  c.model = ViT(c.config);
  TrainingState state;
  state.config.batch = 24;
  state.optimizer = at::zeros({0}, at::kByte);
  state.rng = at::zeros({0}, at::kByte);
  c.training = state;
  save_checkpoint(dir.file("run.ckpt"), c);
  const auto peek = peek_checkpoint(dir.file("run.ckpt"));
  ASSERT_TRUE(peek.has_value());
  EXPECT_EQ(peek->config, c.config);
  ASSERT_TRUE(peek->training.has_value());
  EXPECT_EQ(peek->training->batch, 24);
  std::ifstream file(dir.file("run.ckpt"), std::ios::binary | std::ios::ate);
  EXPECT_EQ(peek->file_bytes, int64_t(file.tellg()));
  // A weights-only file has no training config; what is not a checkpoint gives nothing.
  c.training.reset();
  save_checkpoint(dir.file("weights.ckpt"), c);
  ASSERT_TRUE(peek_checkpoint(dir.file("weights.ckpt")).has_value());
  EXPECT_FALSE(peek_checkpoint(dir.file("weights.ckpt"))->training.has_value());
  std::ofstream(dir.file("bad.ckpt")) << "translution-checkpoint 1 bytes=10 md5=0\nnot a zip";
  EXPECT_FALSE(peek_checkpoint(dir.file("bad.ckpt")).has_value());
  EXPECT_FALSE(peek_checkpoint(dir.file("missing.ckpt")).has_value());
}

TEST(CheckpointPeek, ReadsTheBundledModels) {
  for (const char* name : {"translution", "lor", "attention"}) {
    const auto peek = peek_checkpoint(std::string(TRANSLUTION_SOURCE_ROOT "/resources/models/") + name + ".ckpt");
    ASSERT_TRUE(peek.has_value()) << name;
    EXPECT_EQ(peek->config.model, name);
  }
}

}  // namespace
}  // namespace translution
