// The trainer on real MNIST (small subsets): exact resume, pause/stop, divergence,
// schedule and evaluation bookkeeping.
#include "train/trainer.h"

#include <cmath>
#include <thread>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/bf16_gemm.h"
#include "temp_dir.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "train/evaluate.h"
#include "train/lr_schedule.h"
#include "util/error.h"

namespace translution {
namespace {

using Event = TrainProgress::Event;
using test_support::mnist_dir;
using test_support::TempDir;

ViTConfig small_model(const std::string& model = "translution") {
  ViTConfig c = preset_config("tiny", model);
  c.image_height = c.image_width = 28;
  c.patch = 7;
  c.depth = 1;
  c.dim = 16;
  c.heads = 2;
  c.head_dim = 8;
  c.mlp_dim = 16;
  return c;
}

TrainConfig small_run() {
  TrainConfig t;
  t.dataset = "dynamic";
  t.train_samples = 48;  // 3 steps per epoch at batch 16: the run crosses epochs
  t.batch = 16;
  t.steps = 10;
  t.warmup_steps = 2;
  t.lr = 3e-3;
  t.eval_every = 4;
  t.eval_samples = 32;
  t.seed = 7;
  return t;
}

void expect_same_weights(ViT a, ViT b) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) EXPECT_TRUE(at::equal(p.value(), pb[p.key()])) << p.key();
}

TEST(Trainer, StoppedAndResumedRunEndsAtTheSameWeights) {
  ASSERT_FALSE(mnist_dir().empty()) << "TRANSLUTION_DATA is not set";
  // One case draws new positions every epoch (on a canvas with room for them): the
  // stop falls inside epoch 1. The last steps on the device (train/device_step.h):
  // LibTorch's ops alone, the step counts resumed from the checkpoint.
  struct Case {
    std::string name;
    bool fresh;
    EngineOptions engine;
  };
  const std::vector<Case> cases = {{"translution", false, {}},
                                   {"lor", false, {}},
                                   {"attention", false, {}},
                                   {"attention", true, {}},
                                   {"translution", false, test_support::reference_options()}};
  for (const auto& [name, fresh, engine] : cases) {
    SCOPED_TRACE(name + (engine.reference ? " on the device step" : ""));
    TempDir dir;
    TrainConfig run = small_run();
    run.fresh_positions = fresh;
    ViTConfig model = small_model(name);
    if (fresh) {
      model.image_height = model.image_width = 42;
      model.patch = 14;
    }
    Trainer straight(engine, model, run, mnist_dir(), c10::kCPU);
    EXPECT_EQ(straight.run([](const TrainProgress&) {}), Event::Finished);

    Trainer first(engine, model, run, mnist_dir(), c10::kCPU);
    first.set_checkpoint_path(dir.file("run.ckpt"));
    const Event e = first.run([&](const TrainProgress& p) {
      if (p.event == Event::Step && p.step == 5) first.stop();
    });
    EXPECT_EQ(e, Event::Stopped);
    EXPECT_EQ(first.step(), 5);

    Trainer resumed(engine, load_checkpoint(dir.file("run.ckpt")), mnist_dir(), c10::kCPU);
    EXPECT_EQ(resumed.step(), 5);
    EXPECT_EQ(resumed.run([](const TrainProgress&) {}), Event::Finished);
    EXPECT_EQ(resumed.step(), 10);
    expect_same_weights(straight.model(), resumed.model());
    // The curve continues: points up to the stop, then the resumed ones.
    EXPECT_EQ(resumed.history().back().step, 10);
    EXPECT_FALSE(std::isnan(resumed.history().back().test_accuracy));
  }
}

TEST(Trainer, SameSeedSameRunDifferentSeedDifferentRun) {
  ASSERT_FALSE(mnist_dir().empty());
  TrainConfig t = small_run();
  t.steps = 3;
  Trainer a(EngineOptions{}, small_model(), t, mnist_dir(), c10::kCPU),
      b(EngineOptions{}, small_model(), t, mnist_dir(), c10::kCPU);
  a.run([](const TrainProgress&) {});
  b.run([](const TrainProgress&) {});
  expect_same_weights(a.model(), b.model());
  t.seed = 8;
  Trainer c(EngineOptions{}, small_model(), t, mnist_dir(), c10::kCPU);
  c.run([](const TrainProgress&) {});
  EXPECT_FALSE(
      at::equal(a.model()->named_parameters()["head.weight"], c.model()->named_parameters()["head.weight"]));
}

// Two runs at once in one process (the studio's experiments), each built and trained
// on its own thread, with the engine splitting every product in two: the helper
// threads serve one run at a time, the other's parts run in turn on its own thread.
// Each run still ends at the weights it reaches alone.
TEST(Trainer, TwoRunsSideBySideEachEndWhereTheyEndAlone) {
  ASSERT_FALSE(mnist_dir().empty());
  const EngineOptions engine = test_support::threads_options(2);
  TrainConfig t = small_run();
  t.steps = 4;
  const std::vector<ViTConfig> models = {small_model("translution"), small_model("lor")};
  std::vector<ViT> alone, beside(models.size(), nullptr);
  for (const ViTConfig& m : models) {
    Trainer run(engine, m, t, mnist_dir(), c10::kCPU);
    run.run([](const TrainProgress&) {});
    alone.push_back(run.model());
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < models.size(); ++i)
    threads.emplace_back([&, i] {
      Trainer run(engine, models[i], t, mnist_dir(), c10::kCPU);
      run.run([](const TrainProgress&) {});
      beside[i] = run.model();
    });
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < models.size(); ++i) expect_same_weights(alone[i], beside[i]);
}

TEST(Trainer, Bf16PrecisionTrainsInItAndIsStored) {
  ASSERT_FALSE(mnist_dir().empty());
  TrainConfig t = small_run();
  t.steps = 3;
  t.precision = "bf16";
  if (!bf16_gemm_available()) {  // a clear error before any work, naming the reason
    try {
      Trainer(EngineOptions{}, small_model("attention"), t, mnist_dir(), c10::kCPU);
      ADD_FAILURE() << "a bf16 run started without a bfloat16 kernel";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("AMX"), std::string::npos) << e.what();
    }
    return;
  }
  Trainer bf16(EngineOptions{}, small_model("attention"), t, mnist_dir(), c10::kCPU);
  bf16.run([](const TrainProgress&) {});
  // The run computes in its configured precision: its own options say so.
  EXPECT_EQ(bf16.engine().precision, DensePrecision::Bf16);
  EXPECT_EQ(bf16.checkpoint().training->config.precision, "bf16");
  t.precision = "fp32";
  // Options asking for bf16 do not override a run configured in fp32.
  Trainer fp32(with(EngineOptions{}, &EngineOptions::precision, DensePrecision::Bf16),
               small_model("attention"), t, mnist_dir(), c10::kCPU);
  EXPECT_EQ(fp32.engine().precision, DensePrecision::Fp32);
  fp32.run([](const TrainProgress&) {});
  // The same run but for the dense products' rounding: close, not equal.
  const at::Tensor a = bf16.model()->named_parameters()["head.weight"],
                   b = fp32.model()->named_parameters()["head.weight"];
  EXPECT_FALSE(at::equal(a, b));
  EXPECT_LT((a - b).abs().max().item<double>(), 0.05 * b.abs().max().item<double>());
}

TEST(Trainer, FreshPositionsGiveEveryEpochItsOwnCanvases) {
  ASSERT_FALSE(mnist_dir().empty());
  TrainConfig fixed = small_run(), fresh = small_run();
  fresh.fresh_positions = true;
  EXPECT_EQ(training_placement_seed(fixed, 0), training_placement_seed(fixed, 5));
  EXPECT_NE(training_placement_seed(fresh, 1), training_placement_seed(fresh, 2));
  EXPECT_NE(training_placement_seed(fresh, 0), uint64_t(fresh.data_seed));
  // Both runs see the same digits in the same order; with fresh positions the
  // canvases differ from the first epoch on, so the weights do too.
  fixed.steps = fresh.steps = 3;               // one epoch
  ViTConfig roomy = small_model("attention");  // a 42x42 canvas leaves the digit room to move
  roomy.image_height = roomy.image_width = 42;
  roomy.patch = 14;
  Trainer a(EngineOptions{}, roomy, fixed, mnist_dir(), c10::kCPU),
      b(EngineOptions{}, roomy, fresh, mnist_dir(), c10::kCPU);
  a.run([](const TrainProgress&) {});
  b.run([](const TrainProgress&) {});
  EXPECT_FALSE(
      at::equal(a.model()->named_parameters()["head.weight"], b.model()->named_parameters()["head.weight"]));
  // And the option survives the checkpoint's text form.
  EXPECT_TRUE(TrainConfig::from_text(fresh.to_text()).fresh_positions);
  EXPECT_FALSE(TrainConfig::from_text(fixed.to_text()).fresh_positions);
}

TEST(Trainer, PauseHoldsUntilResumedAndStopEndsAPausedRun) {
  ASSERT_FALSE(mnist_dir().empty());
  Trainer trainer(EngineOptions{}, small_model(), small_run(), mnist_dir(), c10::kCPU);
  std::vector<Event> events;
  std::thread resumer;
  trainer.run([&](const TrainProgress& p) {
    events.push_back(p.event);
    if (p.event == Event::Step && p.step == 2) trainer.pause();
    if (p.event == Event::Paused) {
      EXPECT_EQ(p.step, 2);  // paused before step 3 began
      resumer = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        trainer.resume();
      });
    }
  });
  resumer.join();
  EXPECT_EQ(trainer.step(), 10);
  EXPECT_NE(std::find(events.begin(), events.end(), Event::Resumed), events.end());

  Trainer stopped(EngineOptions{}, small_model(), small_run(), mnist_dir(), c10::kCPU);
  std::thread stopper;
  const Event e = stopped.run([&](const TrainProgress& p) {
    if (p.event == Event::Step && p.step == 1) stopped.pause();
    if (p.event == Event::Paused) stopper = std::thread([&] { stopped.stop(); });
  });
  stopper.join();
  EXPECT_EQ(e, Event::Stopped);
  EXPECT_EQ(stopped.step(), 1);
}

// A step's batch split over the cores (train/forward_backward.h) trains the same run:
// the same weights but for the order of the per-image sums, and the same bits
// every time.
TEST(Trainer, SplitBatchTrainsTheSameRun) {
  ASSERT_FALSE(mnist_dir().empty());
  TrainConfig t = small_run();
  t.steps = 4;
  for (const std::string model : {"translution", "lor", "attention"}) {
    SCOPED_TRACE(model);
    Trainer whole(EngineOptions{}, small_model(model), t, mnist_dir(), c10::kCPU),
        a(EngineOptions{}, small_model(model), t, mnist_dir(), c10::kCPU),
        b(EngineOptions{}, small_model(model), t, mnist_dir(), c10::kCPU);
    a.set_batch_shares(2);
    b.set_batch_shares(2);
    std::vector<double> whole_losses, split_losses;
    whole.run([&](const TrainProgress& p) {
      if (p.event == Event::Step) whole_losses.push_back(p.loss);
    });
    a.run([&](const TrainProgress& p) {
      if (p.event == Event::Step) split_losses.push_back(p.loss);
    });
    b.run([](const TrainProgress&) {});
    expect_same_weights(a.model(), b.model());
    ASSERT_EQ(split_losses.size(), whole_losses.size());
    for (size_t i = 0; i < whole_losses.size(); ++i) EXPECT_NEAR(split_losses[i], whole_losses[i], 1e-5) << i;
    for (const auto& p : whole.model()->named_parameters())
      EXPECT_LT(test_support::max_relative_error(a.model()->named_parameters()[p.key()], p.value()), 1e-4)
          << p.key();
  }
}

TEST(Trainer, DivergenceStopsBeforeTheBadStepAndKeepsTheLastGoodCheckpoint) {
  ASSERT_FALSE(mnist_dir().empty());
  // Two shares on the host step, one on it and one on the device step (its NaN flag read after the step).
  for (const auto& [shares, engine] :
       std::vector<std::pair<int, EngineOptions>>{{1, {}}, {2, {}}, {1, test_support::reference_options()}}) {
    SCOPED_TRACE(std::to_string(shares) + (engine.reference ? " on the device step" : ""));
    TempDir dir;
    TrainConfig t = small_run();
    t.lr = 1e30;  // AdamW steps of ~1e30 overflow the activations within a few steps
    t.warmup_steps = 0;
    t.clip_norm = 0;
    t.checkpoint_every = 1;
    t.steps = 30;
    Trainer trainer(engine, small_model("attention"), t, mnist_dir(), c10::kCPU);
    trainer.set_batch_shares(shares);
    trainer.set_checkpoint_path(dir.file("run.ckpt"));
    std::string message;
    const Event e = trainer.run([&](const TrainProgress& p) {
      if (p.event == Event::Diverged) message = p.message;
    });
    ASSERT_EQ(e, Event::Diverged);
    EXPECT_LT(trainer.step(), 30);
    EXPECT_NE(message.find("step " + std::to_string(trainer.step() + 1)), std::string::npos) << message;
    EXPECT_NE(message.find("run.ckpt holds step " + std::to_string(trainer.step())), std::string::npos)
        << message;
    const Checkpoint last = load_checkpoint(dir.file("run.ckpt"));
    EXPECT_EQ(last.training->step, trainer.step());
    expect_same_weights(last.model, trainer.model());
  }
}

TEST(Trainer, ADivergedRunWritesItsLastGoodStateOrSaysNothingWasWritten) {
  ASSERT_FALSE(mnist_dir().empty());
  TempDir dir;
  TrainConfig t = small_run();
  t.lr = 1e30;
  t.warmup_steps = 0;
  t.clip_norm = 0;
  t.steps = 30;  // no checkpoints on the way: only the end of the run writes one
  for (const bool with_path : {true, false}) {
    SCOPED_TRACE(with_path);
    Trainer trainer(EngineOptions{}, small_model("attention"), t, mnist_dir(), c10::kCPU);
    if (with_path) trainer.set_checkpoint_path(dir.file("diverged.ckpt"));
    std::string message;
    ASSERT_EQ(trainer.run([&](const TrainProgress& p) {
      if (p.event == Event::Diverged) message = p.message;
    }),
              Event::Diverged);
    if (with_path) {
      EXPECT_NE(message.find("diverged.ckpt holds step " + std::to_string(trainer.step())), std::string::npos)
          << message;
      const Checkpoint last = load_checkpoint(dir.file("diverged.ckpt"));
      EXPECT_EQ(last.training->step, trainer.step());
      expect_same_weights(last.model, trainer.model());
    } else {
      EXPECT_NE(message.find("no checkpoint was written"), std::string::npos) << message;
    }
  }
}

TEST(Trainer, ImpossibleConfigurationsAreErrors) {
  ASSERT_FALSE(mnist_dir().empty());
  TrainConfig t = small_run();
  t.batch = 0;
  EXPECT_THROW(Trainer(EngineOptions{}, small_model(), t, mnist_dir(), c10::kCPU), Error);
  t = small_run();
  t.dataset = "cifar";
  EXPECT_THROW(Trainer(EngineOptions{}, small_model(), t, mnist_dir(), c10::kCPU), Error);
  ViTConfig wrong_size = small_model();
  wrong_size.image_height = 14;  // smaller than a digit
  wrong_size.image_width = 14;
  EXPECT_THROW(Trainer(EngineOptions{}, wrong_size, small_run(), mnist_dir(), c10::kCPU), Error);
  EXPECT_THROW(TrainConfig::from_text("lr=fast\n"), Error);
  EXPECT_THROW(TrainConfig::from_text("learning_rate=0.1\n"), Error);
  EXPECT_THROW(TrainConfig::from_text("precision=fp16\n"), Error);
  t = small_run();
  t.precision = "bf16";
  EXPECT_THROW(Trainer(EngineOptions{}, small_model(), t, mnist_dir(), c10::Device("cuda")),
               Error);  // AMX is the CPU's
}

TEST(TrainConfig, RoundTripsThroughText) {
  TrainConfig t = small_run();
  t.lr = 0.000123456789;
  t.min_lr = 1e-7;
  t.precision = "bf16";
  EXPECT_EQ(TrainConfig::from_text(t.to_text()).to_text(), t.to_text());
  EXPECT_EQ(TrainConfig::from_text("").precision, "fp32");  // checkpoints from before the field
  EXPECT_EQ(t.steps_per_epoch(), 3);
}

TEST(LrSchedule, WarmsUpLinearlyThenFollowsACosineToTheMinimum) {
  EXPECT_DOUBLE_EQ(scheduled_lr(0, 100, 10, 1.0, 0.0), 0.1);
  EXPECT_DOUBLE_EQ(scheduled_lr(9, 100, 10, 1.0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(scheduled_lr(10, 100, 10, 1.0, 0.0), 1.0);
  EXPECT_NEAR(scheduled_lr(55, 100, 10, 1.0, 0.0), 0.5, 1e-12);
  EXPECT_NEAR(scheduled_lr(100, 100, 10, 1.0, 0.1), 0.1, 1e-12);
  for (int64_t s = 11; s < 100; ++s)
    EXPECT_LT(scheduled_lr(s, 100, 10, 1.0, 0.0), scheduled_lr(s - 1, 100, 10, 1.0, 0.0));
}

TEST(Evaluate, ConfusionMatrixAccountsForEverySample) {
  ASSERT_FALSE(mnist_dir().empty());
  ViTConfig c = small_model("attention");
  at::manual_seed(0);
  ViT model(c);
  CanvasDataset test = dataset_for_model(c, "static", Split::Test, mnist_dir());
  const EvalResult r = evaluate(EngineOptions{}, model, test, 100, 32, c10::kCPU);
  EXPECT_EQ(r.count, 100);
  EXPECT_EQ(r.confusion.sum().item<int64_t>(), 100);
  // Row sums are the true-class counts of the first 100 test digits.
  const at::Tensor labels = test.digits().labels.narrow(0, 0, 100);
  for (int64_t k = 0; k < 10; ++k)
    EXPECT_EQ(r.confusion[k].sum().item<int64_t>(), labels.eq(k).sum().item<int64_t>());
  EXPECT_NEAR(r.accuracy, double(r.confusion.diagonal().sum().item<int64_t>()) / 100.0, 1e-12);
  EXPECT_TRUE(std::isfinite(r.loss));
}

}  // namespace
}  // namespace translution
