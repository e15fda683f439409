// `translution train`
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "util/json_writer.h"
#include "cli/memory_check.h"
#include "cli/model_options.h"
#include "cli/progress_bar.h"
#include "data/mnist_provision.h"
#include "cpu/bf16_gemm.h"
#include "util/engine_options.h"
#include "train/checkpoint_peek.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "train/training_threads.h"
#include "cpu/blas_kernels.h"
#include "util/device.h"
#include "util/error.h"
#include "util/key_value.h"

namespace translution::cli {
namespace {

const std::string kTrainUsage = R"(usage: translution train --model NAME [--preset A] [--image 84] [--patch 12] [--depth D]
                         [--dataset static|dynamic|moving|mnist] [--epochs 1 | --steps N] [--batch 64]
                         [--lr 3e-4] [--weight-decay 0.05] [--warmup STEPS] [--min-lr 0] [--clip 1.0]
                         [--seed 0] [--data-seed 0] [--fresh-positions] [--train-samples N] [--eval-every STEPS]
                         [--eval-samples 2000] [--checkpoint-every STEPS] [--device auto|cpu|cuda]
                         [--data-dir DIR] [--no-final-eval] [--stop-at STEP] [--recompute]
                         [--precision fp32|bf16|tf32] [--matrix-threads auto|N] [--split-batch auto|on|off]
                         [--json] --out FILE.ckpt
       translution train --resume FILE.ckpt [--steps N] [--fresh-positions] [--stop-at STEP] [--device ...]
                         [--data-dir DIR] [--recompute] [--precision fp32|bf16|tf32] [--matrix-threads auto|N]
                         [--split-batch auto|on|off] [--force] [--json]

Trains with AdamW and a cosine schedule (linear warm-up first when --warmup is set),
evaluating on the first --eval-samples test digits every --eval-every steps (default:
once per epoch). --fresh-positions draws new digit positions on dynamic and moving
canvases every epoch, so no training canvas repeats. The checkpoint (weights, configs,
optimizer state, curves) is written atomically at the end, every --checkpoint-every
steps, and when the run stops (Ctrl-C stops cleanly). --resume continues a saved run
exactly where it stopped (--steps may extend it; --fresh-positions switches new
positions on for the epochs still to come). --stop-at STEP ends the run after that
step with a resumable checkpoint and exit status 0 (Ctrl-C: 130). After the last step
the whole test set is evaluated and its accuracy stored in the checkpoint unless
--no-final-eval. --recompute keeps less for backward (relative layers recompute their
pair projections; the same numbers): Translution ViT-A/12 at batch 32 peaks a quarter
lower for about a sixth more time (docs/performance.md). On a two-core CPU a model
whose weights take at most 64 MiB (self-attention, LoR) splits each step's batch in
two, each core running the forward and backward of its half with one BLAS thread
(the same gradients, summed; ViT-A/12 steps 11-23% faster than with every product
split over the cores, docs/performance.md); larger models (Translution) split the
products, as --split-batch off does for any model, and --split-batch on splits any
model's batch (where $OPENBLAS_NUM_THREADS or a --matrix-threads count says how the
cores are shared, no batch is split, and --split-batch on is an error).
--matrix-threads 1 keeps the engine's work on one thread; a run that shares the
cores with others also sets OPENBLAS_NUM_THREADS=1 (as scripts/reproduce_protocol.sh
does). Model options as
in `model info`. --precision bf16 multiplies the dense layers and Translution's offset
matrices as bfloat16 on the CPU's AMX tiles or AVX512-BF16, summing in fp32 (mixed precision: the
weights, the optimizer and every other op stay fp32; ViT-A/12 self-attention and
Translution trained 1.5-2.5x as fast, docs/performance.md); it needs an Intel Xeon from Sapphire Rapids on
or Cooper Lake, or an AMD Zen 4 on,
and is stored in the checkpoint, so a resumed run keeps it unless --precision says otherwise.
--precision tf32 (CUDA) runs LibTorch's float products on the GPU's tensor cores as TF32
(10-bit mantissa inputs, fp32 sums, as PyTorch's allow_tf32); everything else stays fp32.
)" + std::string(kForceHelp) + "\n";

volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int) { interrupted = 1; }

const char* event_name(TrainProgress::Event e) {
  switch (e) {
    case TrainProgress::Event::Finished: return "finished";
    case TrainProgress::Event::Stopped: return "stopped";
    case TrainProgress::Event::Diverged: return "diverged";
    default: return "running";
  }
}

TrainConfig train_config_from_args(const Args& args) {
  TrainConfig t;
  t.dataset = args.get("dataset", t.dataset);
  t.epochs = args.get_int("epochs", t.epochs);
  t.steps = args.get_int("steps", t.steps);
  t.batch = args.get_int("batch", t.batch);
  t.lr = args.get_double("lr", t.lr);
  t.weight_decay = args.get_double("weight-decay", t.weight_decay);
  t.warmup_steps = args.get_int("warmup", t.warmup_steps);
  t.min_lr = args.get_double("min-lr", t.min_lr);
  t.clip_norm = args.get_double("clip", t.clip_norm);
  t.seed = args.get_int("seed", t.seed);
  t.data_seed = args.get_int("data-seed", t.data_seed);
  t.fresh_positions = args.flag("fresh-positions");
  t.train_samples = args.get_int("train-samples", t.train_samples);
  t.eval_every = args.get_int("eval-every", t.eval_every);
  t.eval_samples = args.get_int("eval-samples", t.eval_samples);
  t.checkpoint_every = args.get_int("checkpoint-every", t.checkpoint_every);
  t.precision = args.get_choice("precision", {"fp32", "bf16", "tf32"});
  t.validate();
  return t;
}

std::unique_ptr<Trainer> make_trainer(const Args& args, const std::string& data_dir, const c10::Device& device) {
  if (args.has("resume")) {
    Checkpoint c = load_checkpoint(args.get("resume"), device);
    if (c.training && args.has("steps")) {
      c.training->config.steps = args.get_int("steps", 0);
      c.training->config.validate();
    }
    if (c.training && args.flag("fresh-positions")) c.training->config.fresh_positions = true;
    if (c.training && args.has("precision")) c.training->config.precision = args.get_choice("precision", {"fp32", "bf16", "tf32"});
    auto trainer = std::make_unique<Trainer>(std::move(c), data_dir, device);
    trainer->set_checkpoint_path(args.get("out", args.get("resume")));
    return trainer;
  }
  auto trainer = std::make_unique<Trainer>(config_from_args(args), train_config_from_args(args), data_dir, device);
  trainer->set_checkpoint_path(args.require("out"));
  return trainer;
}

// The run's memory, from its options or the checkpoint it resumes (read without
// loading it), before the trainer loads the digits and builds the model.
std::optional<MemoryPlan> training_plan(const Args& args) {
  MemoryPlan plan;
  if (args.has("resume")) {
    const std::optional<CheckpointPeek> peek = peek_checkpoint(args.get("resume"));
    if (!peek || !peek->training) return std::nullopt;  // the loader names the problem
    plan = checkpoint_plan(*peek, peek->training->batch);
  } else {
    plan.config = config_from_args(args);
    plan.batch = train_config_from_args(args).batch;
    plan.batch_option = "--batch";
    plan.model_option = "--model";
  }
  plan.recompute_option = "--recompute";
  plan.training = true;
  plan.recompute = args.flag("recompute");
  plan.eval_batch = std::max<int64_t>(plan.batch, 64);  // Trainer's held-out evaluation
  plan.extra_bytes = kMnistBytes;
  plan.extra_what = "the digits";
  return plan;
}

}  // namespace

int train_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kTrainUsage.c_str(), false)) return *status;
  const Args args(words, model_flags({"json", "no-final-eval", "fresh-positions", "recompute", "force"}),
                  model_options({"dataset", "epochs", "steps", "batch", "lr", "weight-decay", "warmup", "min-lr",
                                 "clip", "seed", "data-seed", "train-samples", "eval-every", "eval-samples",
                                 "checkpoint-every", "precision", "device", "data-dir", "out", "resume", "stop-at",
                                 "matrix-threads", "split-batch"}));
  if (!args.has("resume") && !args.has("out")) throw Error("train needs --out FILE.ckpt (or --resume FILE.ckpt)");
  const int64_t stop_at = args.get_int("stop-at", 0);  // a planned pause: checkpoint, exit 0
  if (stop_at < 0) throw Error("--stop-at must be a step number, got " + std::to_string(stop_at));
  const bool json = args.flag("json");
  EngineOptions engine;
  engine.recompute_pair_rows = args.flag("recompute");
  engine.matrix_threads = matrix_threads_option(args, 0);
  engine.batch_split = parse_batch_split(args.get("split-batch", "auto"));
  const ScopedEngineOptions engine_scope(engine);
  const c10::Device device = parse_device(args.get("device", "auto"));
  const std::string data_dir = args.get("data-dir", default_mnist_dir());
  if (const std::optional<MemoryPlan> plan = training_plan(args)) check_plan(args, *plan, device);
  std::unique_ptr<Trainer> trainer = make_trainer(args, data_dir, device);
  const ViTConfig& model = trainer->model()->config();
  std::fprintf(stderr, "training %s ViT-%s/%lld (%.2f M parameters) on %s, %lld steps of %lld, %s%s\n",
               model.model.c_str(), model.preset.c_str(), (long long)model.patch,
               trainer->model()->parameter_count() / 1e6, trainer->config().dataset.c_str(),
               (long long)trainer->total_steps(), (long long)trainer->config().batch, device_description(device).c_str(),
               trainer->config().precision == "bf16"
                   ? (std::string(", bf16 products (") + bf16_gemm_kernel() + ")").c_str()
                   : "");
  if (const std::string hint = avx2_blas_hint(); !hint.empty() && device.is_cpu())
    std::fprintf(stderr, "note: %s\n", hint.c_str());

  const TrainingThreads threads(trainer->model(), device);  // here, on the thread that owns BLAS's setting
  trainer->set_batch_shares(threads.batch_shares());
  if (threads.batch_shares() > 1)
    std::fprintf(stderr, "each step's batch is split over %d cores (--split-batch off splits the products instead)\n",
                 threads.batch_shares());
  std::signal(SIGINT, on_interrupt);
  ProgressBar bar("train", true);
  const auto start = std::chrono::steady_clock::now();
  double last_test = -1, last_loss = 0;
  const TrainProgress::Event outcome = trainer->run([&](const TrainProgress& p) {
    if (interrupted) trainer->stop();
    if (p.event == TrainProgress::Event::Step && stop_at > 0 && p.step >= stop_at) trainer->stop();
    if (p.event == TrainProgress::Event::Step) {
      last_loss = p.loss;
      char detail[96];
      std::snprintf(detail, sizeof detail, "loss %.3f, acc %.2f, %.0f img/s", p.loss, p.accuracy, p.images_per_second);
      bar.update(p.step, p.total_steps, detail, p.eta_seconds);
    } else if (p.event == TrainProgress::Event::Evaluated) {
      last_test = p.test_accuracy;
      bar.finish();
      if (json)
        std::cout << JsonWriter().add("event", "evaluated").add("step", p.step).add("epoch", p.epoch)
                         .add("test_loss", p.test_loss).add("test_accuracy", p.test_accuracy).str() << std::endl;
      else
        std::fprintf(stderr, "step %lld (epoch %.2f): held-out accuracy %.2f%%, loss %.4f\n", (long long)p.step,
                     p.epoch, 100 * p.test_accuracy, p.test_loss);
    } else if (p.event == TrainProgress::Event::Diverged) {
      bar.finish();
      std::fprintf(stderr, "error: %s\n", p.message.c_str());
    }
  });
  bar.finish();
  std::signal(SIGINT, SIG_DFL);
  double test_accuracy = -1;
  if (outcome == TrainProgress::Event::Finished && !args.flag("no-final-eval")) {
    CanvasDataset test = dataset_for_model(model, trainer->config().dataset, Split::Test, data_dir,
                                           uint64_t(trainer->config().data_seed));
    ProgressBar eval_bar("test set", true);
    const EvalResult r = evaluate(trainer->model(), test, 0, 256, device,
                                  [&](int64_t done, int64_t total) { eval_bar.update(done, total); });
    eval_bar.finish();
    test_accuracy = r.accuracy;
    trainer->set_metadata("test_accuracy", format_double(r.accuracy));
    trainer->set_metadata("test_samples", std::to_string(r.count));
    trainer->write_checkpoint();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string path = args.get("out", args.get("resume"));
  if (json) {
    std::cout << JsonWriter().add("event", event_name(outcome)).add("step", trainer->step())
                     .add("total_steps", trainer->total_steps()).add("last_loss", last_loss)
                     .add("held_out_accuracy", last_test).add("test_accuracy", test_accuracy)
                     .add("seconds", seconds).add("checkpoint", path).str() << std::endl;
  } else {
    std::printf("%s after %lld of %lld steps in %.0f s; checkpoint %s\n", event_name(outcome),
                (long long)trainer->step(), (long long)trainer->total_steps(), seconds, path.c_str());
    if (test_accuracy >= 0) std::printf("test accuracy (%s, 10000 digits): %.2f%%\n", trainer->config().dataset.c_str(), 100 * test_accuracy);
  }
  const bool planned_stop = stop_at > 0 && !interrupted && trainer->step() == stop_at;
  if (outcome == TrainProgress::Event::Stopped && planned_stop) return 0;
  return outcome == TrainProgress::Event::Diverged ? 3 : outcome == TrainProgress::Event::Stopped ? 130 : 0;
}

}  // namespace translution::cli
