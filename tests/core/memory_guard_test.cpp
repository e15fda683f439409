// Refusing what will not fit (train/memory_guard.h), with the available memory
// set by $TRANSLUTION_AVAILABLE_MEMORY, and reading a checkpoint's configs
// without loading it (train/checkpoint_peek.h).
#include "train/memory_guard.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>

#include "temp_dir.h"
#include "train/checkpoint.h"
#include "train/checkpoint_peek.h"
#include "util/available_memory.h"
#include "util/device.h"
#include "util/error.h"
#include "util/kernel_numbers.h"

namespace translution {
namespace {

// Sets the override for one test.
class AvailableBytes {
 public:
  explicit AvailableBytes(const std::string& bytes) {
    ::setenv("TRANSLUTION_AVAILABLE_MEMORY", bytes.c_str(), 1);
  }
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
  const size_t batch = why.find(": --batch "), recompute = why.find("--recompute"),
               lor = why.find("--model lor");
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
  EXPECT_NE(check.refusal.find("reading the checkpoint alone needs ~3.0 GB"), std::string::npos)
      << check.refusal;
}

// A resumed run keeps its precision: one trained under bf16 autocast is planned as one,
// and needs less than the same step on LibTorch's ops in fp32.
TEST(MemoryGuard, AResumedRunIsPlannedInItsOwnPrecision) {
  CheckpointPeek peek;
  peek.config = preset_config("A", "translution");
  peek.config.image_height = peek.config.image_width = 84;
  peek.config.patch = 12;
  peek.training = TrainConfig{};
  EXPECT_FALSE(checkpoint_plan(peek, 64).bf16_autocast);
  peek.training->precision = "bf16-autocast";
  MemoryPlan autocast = checkpoint_plan(peek, 64);
  EXPECT_TRUE(autocast.bf16_autocast);
  autocast.training = true;
  MemoryPlan fp32 = autocast;
  fp32.bf16_autocast = false;
  fp32.engine.reference = true;
  EXPECT_LT(check_memory(autocast, c10::kCPU).needed, check_memory(fp32, c10::kCPU).needed);
}

MemoryPlan translution_a12_run(int64_t batch) {
  MemoryPlan plan = translution_a7(batch);
  plan.config.patch = 12;
  plan.eval_batch = std::max<int64_t>(batch, 64);
  plan.saves_checkpoint = true;
  return plan;
}

// Writing a checkpoint holds the whole file beside the run. Translution ViT-A/12 at batch 32
// wrote a 1394013424-byte file and peaked at 3.76 GB resident while writing it (2.37 GB after
// its step); at batch 2, 3.57 GB (2.15 GB).
TEST(MemoryGuard, SavingACheckpointIsCounted) {
  const AvailableBytes available("24000000000");
  for (const auto& [batch, measured_peak] :
       {std::pair<int64_t, double>{32, 3675376 * 1024.0}, {2, 3485964 * 1024.0}}) {
    MemoryPlan plan = translution_a12_run(batch);
    const MemoryCheck saving = check_memory(plan, c10::kCPU);
    plan.saves_checkpoint = false;
    const MemoryCheck running = check_memory(plan, c10::kCPU);
    EXPECT_NEAR(saving.saving, 1394013424.0, 0.02 * 1394013424.0) << batch;
    EXPECT_DOUBLE_EQ(saving.needed - running.needed, saving.saving) << batch;
    const double peak = saving.needed + saving.estimate.baseline;  // the process's peak as estimated
    EXPECT_NEAR(peak / measured_peak, 1.0, 0.12) << "batch " << batch << ": " << peak / 1e9 << " GB";
  }
  // On CUDA the file's bytes are host memory: the device's check does not count them.
  EXPECT_EQ(checkpoint_saving_bytes(translution_a12_run(32).config, MemoryDevice::Cuda), 0.0);
}

TEST(MemoryGuard, ARunThatFitsOnlyWithoutItsSaveIsRefused) {
  MemoryPlan plan = translution_a12_run(2);
  plan.saves_checkpoint = false;
  const double without = [&] {
    const AvailableBytes any("24000000000");
    return check_memory(plan, c10::kCPU).needed;
  }();
  const AvailableBytes available(std::to_string(int64_t(without + 1e8)));
  EXPECT_TRUE(check_memory(plan, c10::kCPU).fits);
  plan.saves_checkpoint = true;
  const MemoryCheck check = check_memory(plan, c10::kCPU);
  EXPECT_FALSE(check.fits);
  EXPECT_NE(check.refusal.find("; writing a checkpoint 1.4 GB beside the run"), std::string::npos)
      << check.refusal;
}

// `train --nproc N`: N processes on one machine, each with the run; rank 0 alone writes the checkpoint.
TEST(MemoryGuard, EveryRankOfNprocIsCounted) {
  MemoryPlan one = translution_a12_run(8);
  double single = 0, baseline = 0, unsaved = 0;
  {
    const AvailableBytes any("24000000000");
    const MemoryCheck c = check_memory(one, c10::kCPU);
    single = c.needed;
    baseline = c.estimate.baseline;
    unsaved = c.needed - c.saving;
  }
  MemoryPlan three = one;
  three.ranks = 3;
  three.ranks_option = "--nproc";
  // Room for two ranks, not three.
  const AvailableBytes available(std::to_string(int64_t(single + unsaved + baseline + 1e8)));
  const MemoryCheck check = check_memory(three, c10::kCPU);
  EXPECT_DOUBLE_EQ(check.needed, single + 2 * (unsaved + baseline));
  ASSERT_FALSE(check.fits);
  EXPECT_EQ(check.refusal.find('\n'), std::string::npos);
  EXPECT_EQ(check.refusal.rfind(
                "training translution ViT-A/12 (84x84) at batch 8 on cpu in 3 ranks (--nproc 3) needs ~", 0),
            0u)
      << check.refusal;
  EXPECT_NE(check.refusal.find("(each rank: weights 465 MB"), std::string::npos) << check.refusal;
  EXPECT_NE(check.refusal.find(": --nproc 2 fits, "), std::string::npos) << check.refusal;
  MemoryPlan two = three;
  two.ranks = 2;
  EXPECT_TRUE(check_memory(two, c10::kCPU).fits);
  EXPECT_TRUE(check_memory(one, c10::kCPU).fits);
}

TEST(MemoryGuard, AnOverrideThatIsNotANumberIsAnError) {
  const AvailableBytes available("lots");
  EXPECT_THROW(check_memory(translution_a7(1), c10::kCPU), Error);
}

TEST(MemoryGuard, TheMachinesOwnFigureIsKnownOnLinux) {
  const AvailableMemory a = available_memory(c10::kCPU);
  EXPECT_GT(a.bytes, 0);
  EXPECT_TRUE(a.source == "MemAvailable" || a.source == "the cgroup's memory limit" ||
              a.source == "ulimit -v")
      << a.source;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// The kernel's "key value" files: whole words only, kB scaled, anything unknown -1.
TEST(KernelNumbers, ReadsKeysAsWholeWordsAndUnknownsAsMinusOne) {
  const test_support::TempDir root;
  const std::string file = (root.path() / "meminfo").string();
  write_text(file, "MemAvailableSoon: 7 kB\nMemAvailable:   3 kB\nHugePages: none\n");
  EXPECT_DOUBLE_EQ(keyed_number(file, "MemAvailable:", 1024), 3072);
  EXPECT_DOUBLE_EQ(keyed_number(file, "HugePages:"), -1);
  EXPECT_DOUBLE_EQ(keyed_number(file, "MemFree:"), -1);
  EXPECT_DOUBLE_EQ(keyed_number((root.path() / "absent").string(), "MemAvailable:"), -1);
  write_text(file, "max\n");
  EXPECT_DOUBLE_EQ(number_in(file), -1);
  write_text(file, "4096\n");
  EXPECT_DOUBLE_EQ(number_in(file), 4096);
  EXPECT_GT(resident_memory_bytes(), 0);
}

// cgroup v2: a limit two levels above the process binds it; the file cache in the usage is
// reclaimable and so not counted; "max" is no limit.
TEST(MemoryGuard, ACgroupV2LimitAboveTheProcessBindsIt) {
  const test_support::TempDir root;
  write_text(root.path() / "slice/memory.max", "1000000\n");
  write_text(root.path() / "slice/memory.current", "400000\n");
  write_text(root.path() / "slice/memory.stat",
             "anon 250000\nfile 150000\nactive_file 50000\ninactive_file 100000\n");
  write_text(root.path() / "slice/job/memory.max", "max\n");
  write_text(root.path() / "slice/job/memory.current", "50000\n");
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), "0::/slice/job\n"), 750000);
  // A tighter level below wins.
  write_text(root.path() / "slice/job/memory.max", "60000\n");
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), "0::/slice/job\n"), 10000);
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), "0::/elsewhere\n"), -1);
}

// cgroup v1: the memory controller's own line and hierarchy; a limit near 2^63 is none.
TEST(MemoryGuard, ACgroupV1MemoryLimitBindsTheProcess) {
  const test_support::TempDir root;
  write_text(root.path() / "memory/memory.limit_in_bytes", "9223372036854771712\n");
  write_text(root.path() / "memory/box/memory.limit_in_bytes", "2000000\n");
  write_text(root.path() / "memory/box/memory.usage_in_bytes", "500000\n");
  write_text(root.path() / "memory/box/memory.stat", "cache 0\ntotal_inactive_file 20000\n");
  write_text(root.path() / "memory/box/run/memory.limit_in_bytes", "9223372036854771712\n");
  const std::string membership = "5:cpu,cpuacct:/box\n4:memory:/box/run\n0::/\n";
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), membership), 1520000);
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), "4:memory:/\n"), -1);
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), "garbage\n4:memory:/../x\n"), -1);
  // A level that does not charge its children to itself (use_hierarchy 0) does not bind them.
  write_text(root.path() / "memory/box/memory.use_hierarchy", "0\n");
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), membership), -1);
  EXPECT_DOUBLE_EQ(cgroup_headroom_bytes(root.path().string(), "4:memory:/box\n"), 1520000);
}

// Sets ulimit -v to leave `room` bytes beyond the address space the process holds and the BLAS
// work buffers its cores may map (128 MiB each), as available_memory counts them. In a child
// only: the limit cannot be lifted again.
bool limit_address_space_to(double room) {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  ::sched_getaffinity(0, sizeof cores, &cores);
  const double buffers = 128.0 * 1024 * 1024 * std::max(1, CPU_COUNT(&cores));
  const auto bound = rlim_t(double(address_space_bytes()) + buffers + room);
  const rlimit limit{bound, bound};
  return ::setrlimit(RLIMIT_AS, &limit) == 0;
}

// Under a limit 300 MB above the address space the process holds and the BLAS buffers its
// threads may map: 0 when the figure is that room, named as the limit (run in a child: the
// limit cannot be lifted again).
int available_under_an_address_space_limit() {
  const double room = 300e6;
  if (!limit_address_space_to(room)) return 2;
  const AvailableMemory a = available_memory(c10::kCPU);
  return a.source == "ulimit -v" && a.bytes > 0.9 * room && a.bytes <= room ? 0 : 1;
}

// ulimit -v binds each process alone: three ranks that each fit under it are not refused for
// their sum, and one rank that does not fit is (run in a child: the limit cannot be lifted).
int ranks_under_an_address_space_limit() {
  MemoryPlan one = translution_a12_run(8), three = one;
  three.ranks = 3;
  three.ranks_option = "--nproc";
  const MemoryCheck single = check_memory(one, c10::kCPU);
  if (!limit_address_space_to(1.3 * single.needed)) return 2;
  const MemoryCheck ranks = check_memory(three, c10::kCPU);
  if (ranks.available.source != "ulimit -v" || !ranks.fits || ranks.needed <= ranks.available.bytes) return 3;
  MemoryPlan larger = three;
  larger.batch = 64;
  larger.batch_option = "--batch";
  const MemoryCheck refused = check_memory(larger, c10::kCPU);
  if (refused.fits) return 4;
  // What it suggests fits each rank: fewer ranks would not help, and the batch it names runs
  // in three.
  const size_t at = refused.refusal.find("--batch ");
  if (refused.refusal.find("--nproc 2 fits") != std::string::npos || at == std::string::npos) return 5;
  if (refused.refusal.find(" in rank 0 (") == std::string::npos) return 7;
  larger.batch = std::stoll(refused.refusal.substr(at + 8));
  return larger.batch >= 8 && check_memory(larger, c10::kCPU).fits ? 0 : 6;
}

TEST(MemoryGuard, AnAddressSpaceLimitBindsEachRankAlone) {
  EXPECT_EXIT(std::exit(ranks_under_an_address_space_limit()), ::testing::ExitedWithCode(0), "");
}

TEST(MemoryGuard, AnAddressSpaceLimitIsWhatIsAvailable) {
  EXPECT_EXIT(std::exit(available_under_an_address_space_limit()), ::testing::ExitedWithCode(0), "");
}

TEST(CheckpointPeek, ReadsTheConfigsWithoutLoadingTheWeights) {
  const test_support::TempDir dir;
  Checkpoint c;
  c.config = preset_config("tiny", "lor");
  c.config.depth = 2;
  c.model = ViT(c.config);
  TrainingState state;
  state.config.batch = 24;
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
    const auto peek =
        peek_checkpoint(std::string(TRANSLUTION_SOURCE_ROOT "/resources/models/") + name + ".ckpt");
    ASSERT_TRUE(peek.has_value()) << name;
    EXPECT_EQ(peek->config.model, name);
  }
}

}  // namespace
}  // namespace translution
