// The hint about OpenBLAS's kernels (cpu/blas_kernels.h). The studio's BLAS
// setting: one thread per GEMM, unless the user says otherwise;
// and a CPU training run's: one thread per GEMM where the model runs per-matrix products.

#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cpu/blas_kernels.h"
#include "cpu/helper_threads.h"
#include "nn/vit.h"
#include "test_switches.h"
#include "train/training_threads.h"
#include "util/device.h"
#include "util/error.h"

namespace translution {
namespace {

TEST(BlasKernels, HintsOnlyAtAvx2KernelsOnAnAvx512Cpu) {
  const std::string set = avx2_blas_hint(true, "Haswell", "Haswell");
  EXPECT_NE(set.find("with OPENBLAS_CORETYPE=Haswell, OpenBLAS runs its AVX2"), std::string::npos) << set;
  EXPECT_NE(set.find("env -u OPENBLAS_CORETYPE"), std::string::npos) << set;
  const std::string chosen = avx2_blas_hint(true, "haswell", nullptr);
  EXPECT_NE(chosen.find("OPENBLAS_CORETYPE=SkylakeX selects"), std::string::npos) << chosen;
  EXPECT_EQ(avx2_blas_hint(false, "Haswell", "Haswell"), "") << "no AVX-512: Haswell is the right choice";
  EXPECT_EQ(avx2_blas_hint(true, "Cooperlake", nullptr), "");
  EXPECT_EQ(avx2_blas_hint(true, "SkylakeX", "SkylakeX"), "");
  const std::string fell_back = avx2_blas_hint(true, "Haswell", "NoSuchCore");
  EXPECT_NE(fell_back.find("with OPENBLAS_CORETYPE=NoSuchCore, OpenBLAS runs its AVX2"), std::string::npos)
      << fell_back;
  EXPECT_EQ(avx2_blas_hint(true, "", nullptr), "") << "not OpenBLAS";
}

TEST(ConcurrentBlas, OpenBlasThreadsEachGemmOnOneThread) {
  if (blas_threads() == 0) {
    EXPECT_FALSE(configure_concurrent_blas());
    GTEST_SKIP() << "this build does not link OpenBLAS";
  }
  if (blas_threads_from_environment()) GTEST_SKIP() << "OPENBLAS_NUM_THREADS is set, and it wins";
  EXPECT_TRUE(configure_concurrent_blas());
  EXPECT_EQ(blas_threads(), 1);
}

TEST(TrainingThreads, OneBlasThreadWhileAModelWithPerMatrixProductsTrains) {
  if (blas_threads() == 0) GTEST_SKIP() << "this LibTorch's BLAS is not OpenBLAS";
  if (blas_threads_from_environment()) GTEST_SKIP() << "OPENBLAS_NUM_THREADS is set, and it wins";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core";
  // The engine's split, as before the batch split.
  const EngineOptions engine = with(EngineOptions{}, &EngineOptions::batch_split, BatchSplit::Off);
  const ScopedBlasThreads two(2);
  ASSERT_EQ(blas_threads(), 2);
  auto model = [](const char* name) {
    ViTConfig c = preset_config("tiny", name);
    c.depth = 1;
    c.image_height = c.image_width = 28;
    c.patch = 7;
    return ViT(c);
  };
  {
    const TrainingThreads threads(engine, model("translution"), c10::Device(c10::kCPU));
    EXPECT_TRUE(threads.engine_splits());
    EXPECT_EQ(blas_threads(), 1);
    EXPECT_TRUE(engine_splits_products());
  }
  EXPECT_EQ(blas_threads(), 2) << "restored when the run ends";
  {
    const TrainingThreads threads(engine, model("lor"), c10::Device(c10::kCPU));
    EXPECT_EQ(blas_threads(), 1);
  }
  {
    const TrainingThreads threads(engine, model("attention"), c10::Device(c10::kCPU));
    EXPECT_FALSE(threads.engine_splits()) << "plain attention: OpenBLAS's threads were faster";
    EXPECT_EQ(blas_threads(), 2);
  }
  {
    // The studio: its slots already share the cores.
    const TrainingThreads threads(test_support::threads_options(1, engine), model("translution"),
                                  c10::Device(c10::kCPU));
    EXPECT_FALSE(threads.engine_splits());
    EXPECT_EQ(blas_threads(), 2);
  }
}

// On two free cores with OpenBLAS a training run splits its batch where the model's
// weights are small: one BLAS thread per GEMM while it does, the model's own
// setting when switched off.
TEST(TrainingThreads, TwoCoresSplitTheBatchWithOneBlasThreadEach) {
  if (blas_threads() == 0) GTEST_SKIP() << "this LibTorch's BLAS is not OpenBLAS";
  if (blas_threads_from_environment()) GTEST_SKIP() << "OPENBLAS_NUM_THREADS is set, and it wins";
  if (free_cores() != 2) GTEST_SKIP() << "the split is measured and used on two cores";
  const EngineOptions engine;  // matrix_threads 0, batch_split Auto
  const ScopedBlasThreads two(2);
  ViTConfig c = preset_config("tiny", "attention");
  c.depth = 1;
  c.image_height = c.image_width = 28;
  c.patch = 7;
  ASSERT_EQ(engine.batch_split, BatchSplit::Auto);
  {
    TrainingThreads threads{engine, ViT(c), c10::Device(c10::kCPU)};
    EXPECT_EQ(threads.batch_shares(), 2);
    EXPECT_FALSE(threads.engine_splits());
    EXPECT_EQ(blas_threads(), 1) << "two shares' GEMMs side by side";
    threads.set_split(false);
    EXPECT_EQ(threads.batch_shares(), 1);
    EXPECT_EQ(blas_threads(), 2) << "plain attention without the split: OpenBLAS's threads";
    threads.set_split(true);
    EXPECT_EQ(blas_threads(), 1);
  }
  EXPECT_EQ(blas_threads(), 2) << "restored when the run ends";
  // Weights of hundreds of MB (each half would read them all): not split unless asked.
  ViTConfig heavy = preset_config("A", "translution");
  heavy.depth = 2;
  heavy.image_height = heavy.image_width = 84;
  heavy.patch = 12;
  const ViT heavy_model(heavy);
  ASSERT_GT(heavy_model->parameter_count() * 4, kSplitWeightLimitBytes);
  {
    TrainingThreads threads(engine, heavy_model, c10::Device(c10::kCPU));
    EXPECT_EQ(threads.batch_shares(), 1);
    EXPECT_TRUE(threads.engine_splits()) << "Translution: the engine's split with one BLAS thread";
    EXPECT_EQ(blas_threads(), 1);
  }
  {
    TrainingThreads threads(with(engine, &EngineOptions::batch_split, BatchSplit::On), heavy_model,
                            c10::Device(c10::kCPU));
    EXPECT_EQ(threads.batch_shares(), 2) << "asked for";
  }
  {
    TrainingThreads threads{with(engine, &EngineOptions::batch_split, BatchSplit::Off), ViT(c),
                            c10::Device(c10::kCPU)};
    EXPECT_EQ(threads.batch_shares(), 1);
    EXPECT_TRUE(threads.split_possible());
  }
  {
    // The studio: its slots already share the cores.
    TrainingThreads threads{test_support::threads_options(1, engine), ViT(c), c10::Device(c10::kCPU)};
    EXPECT_EQ(threads.batch_shares(), 1);
    EXPECT_FALSE(threads.split_possible());
    EXPECT_THROW(threads.set_split(true), Error);
  }
  // LoR without the split keeps the engine's split: one BLAS thread still.
  ViTConfig lor = preset_config("tiny", "lor");
  lor.depth = 1;
  lor.image_height = lor.image_width = 28;
  lor.patch = 7;
  {
    TrainingThreads threads{engine, ViT(lor), c10::Device(c10::kCPU)};
    EXPECT_EQ(threads.batch_shares(), 2);
    threads.set_split(false);
    EXPECT_TRUE(threads.engine_splits());
    EXPECT_EQ(blas_threads(), 1);
  }
  EXPECT_EQ(blas_threads(), 2);
}

TEST(TrainingThreads, AskedSplitWhereNoneIsPossibleIsAnError) {
  ViTConfig c = preset_config("tiny", "attention");
  c.depth = 1;
  c.image_height = c.image_width = 28;
  c.patch = 7;
  // As the studio: the cores are already shared out.
  const EngineOptions engine =
      test_support::threads_options(1, with(EngineOptions{}, &EngineOptions::batch_split, BatchSplit::On));
  try {
    TrainingThreads threads{engine, ViT(c), c10::Device(c10::kCPU)};
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--split-batch on needs"), std::string::npos) << e.what();
  }
}

TEST(TrainingThreads, BatchSplitNames) {
  EXPECT_EQ(parse_batch_split("auto"), BatchSplit::Auto);
  EXPECT_EQ(parse_batch_split("on"), BatchSplit::On);
  EXPECT_EQ(parse_batch_split("off"), BatchSplit::Off);
  try {
    parse_batch_split("sometimes");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sometimes'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace translution
