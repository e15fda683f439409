// `translution train`
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/local_workers.h"
#include "cli/memory_check.h"
#include "cli/model_options.h"
#include "cli/progress_bar.h"
#include "cli/resume_checks.h"
#include "cpu/bf16_gemm.h"
#include "cpu/blas_kernels.h"
#include "cpu/helper_threads.h"
#include "data/mnist_provision.h"
#include "dist/data_parallel.h"
#include "io/byte_source.h"
#include "train/checkpoint_peek.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "train/training_threads.h"
#include "util/cuda_graph.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/key_value.h"
#include "util/md5.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

struct TrainOptions {
  ModelOptions model;
  TrainConfig train;
  std::string device = "auto", data_dir = default_mnist_dir(), out, resume, split_batch = "auto";
  std::string algorithm = "auto";  // how relative projections run (util/engine_options.h)
  std::string kernels = "engine";  // or "reference": LibTorch's ops alone, each step queued on the device
  std::string cuda_graph = "off";  // "on": each step replayed as a CUDA graph (train/graphed_train_step.h)
  int64_t stop_at = 0;             // a planned pause: checkpoint, exit 0
  int matrix_threads = 0;
  bool no_final_eval = false, recompute = false, force = false, json = false;
  int nproc = 1;       // local ranks this process starts (rank 0 among them)
  GroupOptions group;  // this process's place in a data-parallel run
  int timeout_seconds = 300;
  const CLI::App* app = nullptr;
  bool given(const std::string& option) const { return app->count(option) > 0; }
  bool distributed() const { return nproc > 1 || group.world_size > 1 || !group.master.empty(); }
};

// This process's part in a data-parallel run: its group, the workers it started (rank 0
// of --nproc), and whether rank 0 speaks for it (a local worker stays quiet about peers).
struct Parallel {
  std::unique_ptr<LocalWorkers> workers;  // before `data`: the group closes before the workers' folder goes
  std::shared_ptr<DataParallel> data;
  std::optional<ScopedBlasThreads> blas;
  bool local_worker = false;
  int rank() const { return data ? data->rank() : 0; }
};

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

std::string checkpoint_path(const TrainOptions& o) { return o.out.empty() ? o.resume : o.out; }

TrainConfig train_config(const TrainOptions& o) {
  TrainConfig t = o.train;
  t.validate();
  return t;
}

// A data-parallel run's ranks other than 0 get the checkpoint from rank 0 (they may
// not see its file): its bytes, checked on arrival as a file would be.
Checkpoint resumed_checkpoint(const TrainOptions& o, const c10::Device& device, Parallel& parallel) {
  if (!parallel.data) return load_checkpoint(o.resume, device);
  std::string bytes;
  if (parallel.rank() == 0) {
    const FileBytes file(o.resume);  // a regular file: never a FIFO whose read would block the group
    bytes.resize(size_t(file.size()));
    file.read(0, bytes.data(), bytes.size());
  }
  bytes = parallel.data->broadcast_bytes(bytes);
  return parse_checkpoint(bytes, o.resume, device);
}

// The options the run computes under, from its flags (the trainer sets their precision).
EngineOptions train_engine_options(const TrainOptions& o) {
  EngineOptions engine;
  engine.recompute_pair_rows = o.recompute;
  engine.matrix_threads = o.matrix_threads;
  engine.batch_split = parse_batch_split(o.split_batch);
  engine.projection = parse_projection_algorithm(o.algorithm);
  engine.reference = o.kernels == "reference";
  if (engine.reference && o.train.precision == "bf16")
    throw Error(
        "--kernels reference runs LibTorch's ops; --precision bf16 runs the engine's bfloat16 kernels: use "
        "one or the other (--precision bf16-autocast runs LibTorch's ops in bfloat16)");
  if (engine.reference || o.train.precision == "bf16-autocast") {  // the device step runs its batch whole
    if (engine.batch_split == BatchSplit::On)
      throw Error("--split-batch on splits the engine kernels' step; LibTorch's ops run each batch whole");
    engine.batch_split = BatchSplit::Off;
  }
  if (engine.projection == ProjectionAlgorithm::OffsetBatched && o.train.precision == "bf16")
    throw Error(
        "--algorithm offset-batched computes in fp32 (TF32 on a GPU); --precision bf16 runs the CPU "
        "kernels' bfloat16 products per matrix: use one or the other");
  return engine;
}

// The device step's settings (train/device_step.h): one process; graphs on a CUDA device of a
// build that captures.
void check_device_step(const TrainOptions& o) {
  const bool graphs = o.cuda_graph == "on";
  if (o.distributed() && (graphs || o.train.precision == "bf16-autocast"))
    throw Error(std::string(graphs ? "--cuda-graph on" : "--precision bf16-autocast") +
                " trains in one process: data-parallel ranks meet between backward and the update");
  if (!graphs) return;
  const c10::Device device = parse_device(o.device);
  if (!device.is_cuda())
    throw Error("--cuda-graph on replays each step on a CUDA device; this run's device is " + device.str());
  if (!cuda_graphs_supported())
    throw Error("--cuda-graph on needs a CUDA build of LibTorch 2 or later; this one cannot capture");
}

std::unique_ptr<Trainer> make_trainer(const EngineOptions& engine, const TrainOptions& o,
                                      const c10::Device& device, Parallel& parallel) {
  // Only rank 0 writes checkpoints.
  const std::string path = parallel.rank() == 0 ? checkpoint_path(o) : std::string();
  if (!o.resume.empty()) {
    Checkpoint c = resumed_checkpoint(o, device, parallel);
    check_resume_options(
        o.model, o.train, [&o](const std::string& option) { return o.given(option); }, c, o.resume);
    if (c.training && o.given("--steps")) {
      c.training->config.steps = o.train.steps;
      c.training->config.validate();
    }
    if (c.training && o.train.fresh_positions) c.training->config.fresh_positions = true;
    if (c.training && o.given("--precision")) c.training->config.precision = o.train.precision;
    std::unique_ptr<Trainer> trainer;
    try {
      trainer = std::make_unique<Trainer>(engine, std::move(c), o.data_dir, device);
    } catch (const Error& e) {  // the saved state the trainer cannot take: named with its file
      if (std::string(e.what()).rfind("the checkpoint's", 0) != 0) throw;
      throw Error(o.resume + ": " + e.what());
    }
    trainer->set_checkpoint_path(path);
    if (parallel.rank() == 0) trainer->set_resumed_from(o.resume);
    return trainer;
  }
  auto trainer = std::make_unique<Trainer>(engine, o.model.config(), train_config(o), o.data_dir, device);
  trainer->set_checkpoint_path(path);
  return trainer;
}

// The run's memory, from its options or the checkpoint it resumes (read without
// loading it), before the trainer loads the digits and builds the model.
std::optional<MemoryPlan> training_plan(const TrainOptions& o) {
  MemoryPlan plan;
  if (!o.resume.empty()) {
    const std::optional<CheckpointPeek> peek = peek_checkpoint(o.resume);
    if (!peek || !peek->training) return std::nullopt;  // the loader names the problem
    plan = checkpoint_plan(*peek, peek->training->batch);
  } else {
    plan.config = o.model.config();
    plan.batch = train_config(o).batch;
    plan.batch_option = "--batch";
    plan.model_option = "--model";
  }
  plan.engine = train_engine_options(o);
  plan.recompute_option = "--recompute";
  plan.training = true;
  plan.recompute = o.recompute;
  if (o.resume.empty() || o.given("--precision")) plan.bf16_autocast = o.train.precision == "bf16-autocast";
  plan.eval_batch = std::max<int64_t>(plan.batch, 64);  // Trainer's held-out evaluation
  plan.extra_bytes = kMnistBytes;
  plan.extra_what = "the digits";
  plan.saves_checkpoint = o.group.rank == 0;  // rank 0 writes the checkpoints
  return plan;
}

void print_start(const Trainer& trainer, const c10::Device& device) {
  const ViTConfig& model = trainer.model()->config();
  const std::string bf16_kernel = bf16_gemm_kernel(trainer.engine().bf16_tiles);
  std::fprintf(stderr, "training %s ViT-%s/%lld (%.2f M parameters) on %s, %lld steps of %lld, %s%s\n",
               model.model.c_str(), model.preset.c_str(), (long long)model.patch,
               trainer.model()->parameter_count() / 1e6, trainer.config().dataset.c_str(),
               (long long)trainer.total_steps(), (long long)trainer.config().batch,
               device_description(device).c_str(),
               trainer.config().precision == "bf16" ? (", bf16 products (" + bf16_kernel + ")").c_str() : "");
  if (const std::string hint = avx2_blas_hint(); !hint.empty() && device.is_cpu())
    std::fprintf(stderr, "note: %s\n", hint.c_str());
}

// What one run reports as it goes: each step on the progress bar, evaluations, divergence.
struct RunReport {
  double last_test = -1, last_loss = 0;
};

// A planned pause must fall inside the run still to go, or it would never come (beyond the
// last step) or end the run at once with an interruption's exit code (already passed).
void check_stop_at(const TrainOptions& o, const Trainer& trainer) {
  if (o.stop_at == 0) return;
  if (o.stop_at > trainer.total_steps())
    throw Error("--stop-at " + std::to_string(o.stop_at) + " is beyond the run's last step (" +
                std::to_string(trainer.total_steps()) + ")");
  if (o.stop_at <= trainer.step())
    throw Error("--stop-at " + std::to_string(o.stop_at) + " has passed: the resumed run is at step " +
                std::to_string(trainer.step()));
}

TrainProgress::Event run_steps(Trainer& trainer, const TrainOptions& o, RunReport& report, bool speaks) {
  std::signal(SIGINT, on_interrupt);
  ProgressBar bar("train", speaks);
  const TrainProgress::Event outcome = trainer.run([&](const TrainProgress& p) {
    if (interrupted) trainer.stop();
    if (p.event == TrainProgress::Event::Step && o.stop_at > 0 && p.step >= o.stop_at) trainer.stop();
    if (!speaks) return;
    if (p.event == TrainProgress::Event::Step) {
      report.last_loss = p.loss;
      char detail[96];
      std::snprintf(detail, sizeof detail, "loss %.3f, acc %.2f, %.0f img/s", p.loss, p.accuracy,
                    p.images_per_second);
      bar.update(p.step, p.total_steps, detail, p.eta_seconds);
    } else if (p.event == TrainProgress::Event::Evaluated) {
      report.last_test = p.test_accuracy;
      bar.finish();
      if (o.json)
        std::cout << json_line(nlohmann::ordered_json{{"event", "evaluated"},
                                                      {"step", p.step},
                                                      {"epoch", p.epoch},
                                                      {"test_loss", p.test_loss},
                                                      {"test_accuracy", p.test_accuracy}})
                  << std::endl;
      else
        std::fprintf(stderr, "step %lld (epoch %.2f): held-out accuracy %.2f%%, loss %.4f\n",
                     (long long)p.step, p.epoch, 100 * p.test_accuracy, p.test_loss);
    } else if (p.event == TrainProgress::Event::Diverged) {
      bar.finish();
      std::fprintf(stderr, "error: %s\n", p.message.c_str());
    }
  });
  bar.finish();
  std::signal(SIGINT, SIG_DFL);
  return outcome;
}

// The whole test set's accuracy, stored in the checkpoint.
double final_evaluation(Trainer& trainer, const TrainOptions& o, const c10::Device& device) {
  CanvasDataset test = dataset_for_model(trainer.model()->config(), trainer.config().dataset, Split::Test,
                                         o.data_dir, uint64_t(trainer.config().data_seed));
  ProgressBar eval_bar("test set", true);
  const EvalResult r = evaluate(trainer.engine(), trainer.model(), test, 0, 256, device,
                                [&](int64_t done, int64_t total) { eval_bar.update(done, total); });
  eval_bar.finish();
  trainer.set_metadata("test_accuracy", format_double(r.accuracy));
  trainer.set_metadata("test_samples", std::to_string(r.count));
  trainer.write_checkpoint();
  return r.accuracy;
}

void print_end(const Trainer& trainer, const TrainOptions& o, TrainProgress::Event outcome,
               const RunReport& report, double test_accuracy, double seconds) {
  // A run that diverged before any good state was saved wrote nothing: it names no file.
  const std::string path = trainer.saved() ? checkpoint_path(o) : std::string();
  if (o.json) {
    const nlohmann::ordered_json out = {
        {"event", event_name(outcome)},
        {"step", trainer.step()},
        {"total_steps", trainer.total_steps()},
        {"last_loss", report.last_loss},
        {"held_out_accuracy", report.last_test},
        {"test_accuracy", test_accuracy},
        {"seconds", seconds},
        {"checkpoint", path.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(path)}};
    std::cout << json_line(out) << std::endl;
    return;
  }
  std::printf("%s after %lld of %lld steps in %.0f s; %s\n", event_name(outcome), (long long)trainer.step(),
              (long long)trainer.total_steps(), seconds,
              path.empty() ? "no checkpoint written" : ("checkpoint " + path).c_str());
  if (test_accuracy >= 0)
    std::printf("test accuracy (%s, 10000 digits): %.2f%%\n", trainer.config().dataset.c_str(),
                100 * test_accuracy);
}

// Where --nproc starts the ranks: pins this process (rank 0) and each worker to its
// share of the cores; with one core a rank, each computes on one thread.
void start_local_ranks(TrainOptions& o, Parallel& parallel) {
  const std::vector<int> cores = rank_cores(0, o.nproc);
  std::vector<std::string> extra;
  if (cores.size() == 1) {
    if (!o.given("--matrix-threads")) {
      o.matrix_threads = 1;
      extra.insert(extra.end(), {"--matrix-threads", "1"});
    }
    if (!o.given("--split-batch")) {
      o.split_batch = "off";
      extra.insert(extra.end(), {"--split-batch", "off"});
    }
  }
  parallel.workers = std::make_unique<LocalWorkers>(o.nproc, extra);
  o.group.rank = 0;
  o.group.world_size = o.nproc;
  o.group.master = parallel.workers->master();
  o.group.local = true;
  pin_to_cores(cores);
  if (!cores.empty()) parallel.blas.emplace(int(cores.size()));
}

void prepare_parallel(TrainOptions& o, Parallel& parallel) {
  const char* option = o.nproc > 1 ? "--nproc" : "--world-size";
  if (!ProcessGroup::available())
    throw Error(std::string(option) +
                " trains data-parallel, which this build lacks: " + ProcessGroup::missing_reason());
  if (o.nproc > 1 && (o.given("--rank") || o.given("--world-size") || o.given("--master")))
    throw Error(
        "--nproc starts the ranks of one machine itself: give either --nproc N, or --rank, --world-size and "
        "--master on each process");
  o.group.timeout = std::chrono::seconds(o.timeout_seconds);
  o.group.cuda = parse_device(o.device).is_cuda();
  // Before any worker starts. NCCL refuses two ranks on one GPU ("invalid usage", seen on an H100).
  if (ProcessGroup::backend_for(o.group) == "nccl" && o.nproc > int(torch::cuda::device_count()))
    throw Error("--nproc " + std::to_string(o.nproc) + " with NCCL needs a GPU a rank, and " +
                std::to_string(torch::cuda::device_count()) +
                " are visible (NCCL refuses two ranks on one GPU)");
  parallel.local_worker = std::getenv(kWorkerEnvironment) != nullptr;
  // Before any worker starts: the ranks of this machine each hold a run of their own.
  if (o.nproc > 1)
    if (const std::optional<MemoryPlan> plan = training_plan(o))
      check_local_ranks(o.force, *plan, o.device, o.nproc);
  if (o.nproc > 1) start_local_ranks(o, parallel);
  o.group.validate();
}

// The MNIST files a run reads, as one digest: every dataset is drawn from them, and ranks
// reading other copies (a label changed, say) would train on other digits and never say so.
// Each is read as a regular file (a FIFO or a device there is refused in one line, never waited on).
std::string mnist_digest(const std::string& dir) {
  std::string digests;
  std::vector<char> chunk(size_t(1) << 20);
  for (const std::string& path : mnist_paths(dir)) {
    if (!std::filesystem::exists(path))
      throw Error(dir + ": MNIST files are missing; run `translution data fetch`");
    const FileBytes file(path);
    Md5 md5;
    for (uint64_t at = 0; at < file.size(); at += chunk.size()) {
      const size_t n = size_t(std::min<uint64_t>(chunk.size(), file.size() - at));
      file.read(at, chunk.data(), n);
      md5.update(chunk.data(), n);
    }
    digests += md5.hex_digest();
  }
  return md5_hex(digests.data(), digests.size());
}

// What every rank must agree on before the first collective.
std::string fingerprint(const TrainOptions& o, const c10::Device& device) {
  // The bucket size fixes the messages' lengths, which must match (Gloo aborts otherwise).
  std::string text = std::string("device=") + (device.is_cuda() ? "cuda" : "cpu") +
                     "\nbucket_bytes=" + std::to_string(kBucketBytes) +
                     "\nmnist_md5=" + mnist_digest(o.data_dir) + "\n";
  if (o.resume.empty()) return text + o.model.config().to_text() + train_config(o).to_text();
  text += "resume=rank 0's checkpoint\n";  // its path may differ from machine to machine
  if (o.given("--steps")) text += "steps=" + std::to_string(o.train.steps) + "\n";
  if (o.given("--precision")) text += "precision=" + o.train.precision + "\n";
  return text + "fresh_positions=" + std::to_string(o.train.fresh_positions) + "\n";
}

void join_group(TrainOptions& o, c10::Device& device, Parallel& parallel) {
  if (device.is_cuda() && torch::cuda::device_count() > 1 && o.device.find(':') == std::string::npos)
    device = c10::Device(c10::kCUDA, c10::DeviceIndex(o.group.rank % int(torch::cuda::device_count())));
  o.group.cuda = device.is_cuda();
  o.group.cuda_device = device.is_cuda() ? device.index() : 0;
  std::shared_ptr<ProcessGroup> group = ProcessGroup::join(o.group, fingerprint(o, device));
  parallel.data = std::make_shared<DataParallel>(std::move(group));
}

void print_parallel(const Trainer& trainer, const DataParallel& parallel) {
  const int64_t batch = trainer.config().batch, ranks = parallel.world_size();
  std::fprintf(stderr, "data-parallel over %lld ranks (%s): each step's %lld images split %lld-%lld a rank\n",
               (long long)ranks, parallel.group().backend().c_str(), (long long)batch,
               (long long)(batch / ranks), (long long)((batch + ranks - 1) / ranks));
}

int train(TrainOptions& o, Parallel& parallel) {
  if (o.resume.empty() && o.out.empty()) throw Error("train needs --out FILE.ckpt (or --resume FILE.ckpt)");
  // Rank 0 writes the checkpoint: its path is checked before any work, not after the run.
  if (std::getenv(kWorkerEnvironment) == nullptr && o.group.rank == 0) {
    checked_output_path(checkpoint_path(o));
    refuse_inputs_as_outputs(mnist_paths(o.data_dir), {checkpoint_path(o)});
  }
  if (o.nproc > int(std::thread::hardware_concurrency()) && !o.force)
    throw Error("--nproc " + std::to_string(o.nproc) + " is more ranks than this machine's " +
                std::to_string(std::thread::hardware_concurrency()) + " cores (--force starts them anyway)");
  check_device_step(o);
  if (o.distributed()) prepare_parallel(o, parallel);
  const EngineOptions engine = train_engine_options(o);
  c10::Device device = parse_device(o.device);
  if (const std::optional<MemoryPlan> plan = training_plan(o)) check_plan(o.force, *plan, device);
  if (o.distributed()) join_group(o, device, parallel);
  std::unique_ptr<Trainer> trainer = make_trainer(engine, o, device, parallel);
  if (parallel.data) trainer->set_data_parallel(parallel.data);
  check_stop_at(o, *trainer);
  const bool speaks = parallel.rank() == 0;  // rank 0 reports the run
  if (speaks) print_start(*trainer, device);
  if (speaks && parallel.data) print_parallel(*trainer, *parallel.data);
  // Here, on the thread that owns BLAS's setting.
  const TrainingThreads threads(trainer->engine(), trainer->model(), device);
  trainer->set_batch_shares(threads.batch_shares());
  trainer->set_cuda_graphs(o.cuda_graph == "on");
  if (speaks && threads.batch_shares() > 1)
    std::fprintf(stderr,
                 "each step's batch is split over %d cores (--split-batch off splits the products instead)\n",
                 threads.batch_shares());
  const auto start = std::chrono::steady_clock::now();
  RunReport report;
  const TrainProgress::Event outcome = run_steps(*trainer, o, report, speaks);
  if (!speaks) return 0;  // every rank ended at the same step; rank 0 reports how
  double test_accuracy = -1;
  if (outcome == TrainProgress::Event::Finished && !o.no_final_eval)
    test_accuracy = final_evaluation(*trainer, o, device);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (parallel.workers)  // they ended with the loop; rank 0's final evaluation is its own
    if (const std::string failed = parallel.workers->wait_all(); !failed.empty()) throw Error(failed);
  print_end(*trainer, o, outcome, report, test_accuracy, seconds);
  const bool planned_stop = o.stop_at > 0 && !interrupted && trainer->step() == o.stop_at;
  if (outcome == TrainProgress::Event::Stopped && planned_stop) return 0;
  return outcome == TrainProgress::Event::Diverged ? 3 : outcome == TrainProgress::Event::Stopped ? 130 : 0;
}

// A rank that fails says so in one line. A peer's failure is rank 0's to report for a
// --nproc run (with how the worker ended), and each process's own in a run across machines.
int train_command(TrainOptions& o) {
  Parallel parallel;
  try {
    return train(o, parallel);
  } catch (const PeerFailure& e) {
    if (parallel.local_worker) return kPeerFailedStatus;
    // A worker that died inside a collective is not behind the others: its exit names it.
    std::string message = e.what();
    if (parallel.workers)
      if (const std::string exits = parallel.workers->exits_so_far(); !exits.empty())
        message = exits + "; " + message;
    std::fprintf(stderr, "error: %s\n", printable(message).c_str());
    return kPeerFailedStatus;
  } catch (const std::exception& e) {
    if (!parallel.local_worker) throw;
    std::fprintf(stderr, "error: rank %s: %s\n", std::getenv(kWorkerEnvironment), one_line(e, false).c_str());
    return 1;
  }
}

void add_schedule_options(CLI::App& app, TrainConfig& t) {
  add_choice(app, "--dataset", t.dataset, {"static", "dynamic", "moving", "mnist"}, "training set");
  app.add_option("--epochs", t.epochs, "passes over the training set (without --steps)")
      ->check(in_range("--epochs", 0, kMaxTrainSteps))
      ->capture_default_str();
  app.add_option("--steps", t.steps, "optimisation steps (a resumed run: extends it)")
      ->check(in_range("--steps", 0, kMaxTrainSteps));
  app.add_option("--batch", t.batch, "images per step")->check(at_least("--batch", 1))->capture_default_str();
  app.add_option("--lr", t.lr, "AdamW's peak learning rate")->check(decimal("--lr"))->capture_default_str();
  app.add_option("--weight-decay", t.weight_decay, "AdamW's weight decay")
      ->check(decimal("--weight-decay"))
      ->capture_default_str();
  app.add_option("--warmup", t.warmup_steps, "linear warm-up steps before the cosine decay")
      ->check(in_range("--warmup", 0, kMaxTrainSteps));
  app.add_option("--min-lr", t.min_lr, "learning rate at the end of the decay")->check(decimal("--min-lr"));
  app.add_option("--clip", t.clip_norm, "gradient-norm clip (0: none)")
      ->check(decimal("--clip"))
      ->capture_default_str();
  app.add_option("--seed", t.seed, "initialisation and batch order")->check(at_least("--seed", 0));
  app.add_option("--data-seed", t.data_seed, "digit positions on the canvas")
      ->check(at_least("--data-seed", 0));
  app.add_flag("--fresh-positions", t.fresh_positions, "new digit positions every epoch");
  app.add_option("--train-samples", t.train_samples, "the first N training digits (0: all)")
      ->check(in_range("--train-samples", 0, 60000));  // MNIST's training split
  app.add_option("--eval-every", t.eval_every, "steps between held-out evaluations (0: once per epoch)")
      ->check(in_range("--eval-every", 0, kMaxTrainSteps));
  app.add_option("--eval-samples", t.eval_samples, "test digits per held-out evaluation")
      ->check(in_range("--eval-samples", 0, 10000))  // MNIST's test split
      ->capture_default_str();
  app.add_option("--checkpoint-every", t.checkpoint_every, "steps between checkpoint writes (0: at the end)")
      ->check(in_range("--checkpoint-every", 0, kMaxTrainSteps));
  add_choice(app, "--precision", t.precision, {"fp32", "bf16", "bf16-autocast", "tf32"},
             "the products: bf16 on the engine's CPU kernels, bf16-autocast on LibTorch's ops (CPU or "
             "CUDA), tf32 on CUDA");
}

void add_distributed_options(CLI::App& app, TrainOptions& o) {
  app.add_option("--nproc", o.nproc, "train data-parallel in N processes on this machine (c10d)")
      ->check(in_range("--nproc", 1, kMaxRanks));
  app.add_option("--world-size", o.group.world_size, "processes in a run across machines (one command each)")
      ->check(in_range("--world-size", 1, kMaxRanks));
  app.add_option("--rank", o.group.rank, "this process's rank in that run (0 serves the rendezvous)")
      ->check(in_range("--rank", 0, kMaxRanks - 1));
  app.add_option("--master", o.group.master,
                 "where the ranks meet: rank 0's HOST:PORT, or file:PATH on a shared disk")
      ->type_name("HOST:PORT");
  app.add_option(
         "--run-id", o.group.run_id,
         "a secret text every rank of a --master HOST:PORT run is given: rank 0 admits no other process")
      ->envname("TRANSLUTION_RUN_ID")
      ->type_name("TEXT");
  add_choice(app, "--backend", o.group.backend, {"auto", "gloo", "nccl"},
             "collectives: gloo (CPU tensors), nccl (CUDA); auto picks by device");
  app.add_option("--timeout", o.timeout_seconds,
                 "seconds a rank waits for the others (to join, in each step)")
      ->check(at_least("--timeout", 1))
      ->capture_default_str();
  app.add_option("--interface", o.group.interface,
                 "network interface Gloo uses between machines (e.g. eth0)");
}

}  // namespace

void add_train_command(CLI::App& root, Runners& runners) {
  CLI::App* app = root.add_subcommand("train", "train a model on a digit dataset (AdamW, cosine schedule)");
  auto o = std::make_shared<TrainOptions>();
  o->app = app;
  add_model_options(*app, o->model);
  add_schedule_options(*app, o->train);
  app->add_option("--out", o->out, "checkpoint to write")->type_name("FILE.ckpt");
  app->add_option("--resume", o->resume, "continue a saved run")->type_name("FILE.ckpt");
  app->add_option("--stop-at", o->stop_at, "stop after this step with a resumable checkpoint (exit 0)")
      ->check(at_least("--stop-at", 0));
  app->add_flag("--no-final-eval", o->no_final_eval, "skip the whole test set after the last step");
  app->add_flag("--recompute", o->recompute, "keep less for backward (same numbers, more time)");
  add_device(*app, o->device);
  app->add_option("--data-dir", o->data_dir, "MNIST folder");
  add_matrix_threads(*app, o->matrix_threads);
  app->add_option("--split-batch", o->split_batch, "split each step's batch over the cores")
      ->type_name("auto|on|off")
      ->capture_default_str();
  add_choice(*app, "--algorithm", o->algorithm, {"auto", "per-matrix", "all-tokens", "offset-batched"},
             "how relative projections run (same numbers, different work)");
  add_choice(*app, "--kernels", o->kernels, {"engine", "reference"},
             "the engine's kernels, or LibTorch's ops with each step queued on the device");
  add_choice(*app, "--cuda-graph", o->cuda_graph, {"on", "off"}, "replay each step as a CUDA graph");
  app->add_flag("--force", o->force, kForceHelp);
  app->add_flag("--json", o->json, "print JSON lines: evaluations and the outcome");
  add_distributed_options(*app, *o);
  runners[app] = [o] { return train_command(*o); };
}

}  // namespace translution::cli
