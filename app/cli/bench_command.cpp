// `translution bench`
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/memory_check.h"
#include "cli/model_options.h"
#include "cli/progress_bar.h"
#include "cpu/bf16_gemm.h"
#include "cpu/bf16_weights.h"
#include "cpu/blas_gemm.h"
#include "cpu/blas_kernels.h"
#include "cpu/helper_threads.h"
#include "data/canvas_dataset.h"
#include "data/mnist_provision.h"
#include "infer/predictor.h"
#include "nn/vit.h"
#include "perf/benchmark.h"
#include "perf/operator_counts.h"
#include "perf/studio_latency.h"
#include "train/training_threads.h"
#include "util/cuda_graph.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"

namespace translution::cli {
namespace {

// The studio mode draws its canvases before it times them (28 KB each): a bound on both modes' steps.
constexpr int64_t kMaxBenchSteps = 10000;

const char* kStudioCheckpoints = "resources/models/translution.ckpt,resources/models/attention.ckpt";

struct BenchArgs {
  ModelOptions model;
  std::string mode = "infer", device = "cpu", algorithm = "auto", last_block = "cls", reassociation = "on";
  std::string kernels = "engine", precision = "fp32", split_batch = "auto", compare, cuda_graph = "on";
  std::string train_step = "auto";
  std::string checkpoints = kStudioCheckpoints, data_dir = default_mnist_dir();
  int64_t batch = 1;
  int steps = 0, warmup = 2;  // steps 0: the mode's default
  int matrix_threads = -1;    // -1: the mode's default
  bool recompute = false, force = false, json = false, count_ops = false;
  const CLI::App* app = nullptr;
  bool given(const std::string& option) const { return app->count(option) > 0; }
  bool train() const { return mode == "train"; }
};

// The engine's options the flags ask for (util/engine_options.h). --kernels reference
// runs LibTorch's plain ops wherever the engine has its own path.
EngineOptions bench_engine_options(const BenchArgs& a) {
  if (a.given("--split-batch") && !a.train()) throw Error("--split-batch applies to --mode train");
  EngineOptions engine;
  engine.reference = a.kernels == "reference" || a.precision == "bf16-autocast";  // autocast: LibTorch's ops
  engine.matrix_threads = a.matrix_threads >= 0 ? a.matrix_threads : a.mode == "studio" ? 1 : 0;
  engine.projection = parse_projection_algorithm(a.algorithm);
  engine.recompute_pair_rows = a.recompute;
  engine.cls_only_last_block = a.last_block == "cls";
  engine.query_reassociation = a.reassociation == "on";
  engine.batch_split = parse_batch_split(a.split_batch);
  return engine;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The studio bench's models: the checkpoints named, or with --model one model of
// that config with fresh weights (e.g. ViT-A/12, which no bundled file holds).
// Each is checked to fit on `device` before it is built or loaded.
std::vector<std::pair<std::string, Checkpoint>> studio_models(const BenchArgs& a, const EngineOptions& engine,
                                                              const c10::Device& device) {
  std::vector<std::pair<std::string, Checkpoint>> out;
  if (a.model.given("--model")) {
    if (a.given("--checkpoints"))
      throw Error("--model and --checkpoints each choose the studio's models: give one");
    Checkpoint fresh;
    fresh.config = a.model.config();
    MemoryPlan plan;
    plan.config = fresh.config;
    plan.engine = engine;
    check_plan(a.force, plan, device);
    fresh.model = ViT(fresh.config);
    out.emplace_back(fresh.config.model + " (fresh weights)", std::move(fresh));
    return out;
  }
  const auto paths = split_commas(a.checkpoints);
  // The studio shows at most four slots; a few more still measure how slots share the cores.
  constexpr size_t kMostSlots = 8;
  if (paths.size() > kMostSlots)
    throw Error("--checkpoints names " + std::to_string(paths.size()) +
                " models; the studio bench runs at most " + std::to_string(kMostSlots) + " slots");
  check_checkpoints(engine, a.force, paths, 1, "", device);
  for (const auto& path : paths) out.emplace_back(path, load_checkpoint(path));
  return out;
}

void print_studio(const BenchArgs& a, const EngineOptions& engine, const std::vector<std::string>& paths,
                  const std::vector<std::unique_ptr<Predictor>>& slots, const c10::Device& device,
                  const StudioLatency& r) {
  if (a.json) {
    const bool onednn = !engine.reference && onednn_sgemm_applies();  // the reference keeps to LibTorch's ops
    std::string graph_states;
    for (const auto& slot : slots) graph_states += (graph_states.empty() ? "" : ",") + slot->graph_state();
    const nlohmann::ordered_json out = {{"mode", "studio"},
                                        {"checkpoints", a.model.given("--model") ? paths[0] : a.checkpoints},
                                        {"device", device.str()},
                                        {"forward", graph_states},
                                        {"changes", r.changes},
                                        {"median_ms", r.median_ms},
                                        {"p90_ms", r.p90_ms},
                                        {"max_ms", r.max_ms},
                                        {"slot_median_ms", r.slot_median_ms},
                                        {"slot_kernels", r.slot_kernels},
                                        {"threads", at::get_num_threads()},
                                        {"matrix_threads", matrix_threads(engine)},
                                        {"blas_threads", blas_threads()},
                                        {"sgemm", onednn ? "onednn" : "blas"},
                                        {"blas_core", blas_core()},
                                        {"cpu_steal", r.cpu_steal}};
    std::cout << json_line(out) << std::endl;
    return;
  }
  std::printf("studio inference path: %zu slots, %d canvas changes, attention maps on\n", slots.size(),
              r.changes);
  std::printf("  latency per change (all slots): median %.2f ms, 90th percentile %.2f ms, max %.2f ms\n",
              r.median_ms, r.p90_ms, r.max_ms);
  for (size_t s = 0; s < slots.size(); ++s)
    std::printf(
        "  %s: median %.2f ms (%s; %s%s)\n", paths[s].c_str(), r.slot_median_ms[s],
        slots[s]->description().c_str(), slots[s]->graph_state().c_str(),
        r.slot_kernels[s] >= 0 ? (", " + std::to_string(r.slot_kernels[s]) + " kernels").c_str() : "");
  if (r.cpu_steal >= 0)
    std::printf("  CPU steal during the changes: %.1f%% of the machine's CPU time went to other guests\n",
                100 * r.cpu_steal);
}

int studio_bench(const BenchArgs& a, const EngineOptions& engine) {
  configure_concurrent_blas();  // as the studio does
  const c10::Device device = parse_device(a.device);
  const bool graphs = a.cuda_graph == "on";
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<Predictor>> slots;
  std::vector<const Predictor*> views;
  for (auto& [name, checkpoint] : studio_models(a, engine, device)) {
    paths.push_back(name);
    slots.push_back(std::make_unique<Predictor>(engine, std::move(checkpoint), name, device, graphs));
    views.push_back(slots.back().get());
  }
  const MnistDigits test = load_mnist(a.data_dir, Split::Test);
  const int changes = a.steps > 0 ? a.steps : 60;
  std::vector<at::Tensor> canvases;
  for (int i = 0; i < changes; ++i) {  // the first test digit dragged corner to corner
    const int64_t at = int64_t(i) * 56 / std::max(1, changes - 1);
    canvases.push_back(compose_canvas(test.images[0], 84, {at, at}));
  }
  ProgressBar bar("studio latency", !a.json);
  const StudioLatency r = measure_studio_latency(views, canvases, [&](int d, int t) { bar.update(d, t); });
  bar.finish();
  print_studio(a, engine, paths, slots, device, r);
  return 0;
}

// The products' precision; tf32 is fp32 to the engine's own products (LibTorch's CUDA
// products take TF32: util/device.h). Training in bf16 needs bf16_gemm (parse_dense_precision
// says why not); a forward without gradients reads bfloat16 weights on AVX-512 (cpu/bf16_weights.h).
DensePrecision bench_precision(const BenchArgs& a) {
  if (a.mode == "studio" && a.given("--precision"))
    throw Error("--precision applies to --mode infer and --mode train");
  if (a.mode != "studio" && a.given("--cuda-graph")) throw Error("--cuda-graph applies to --mode studio");
  if (a.precision == "bf16-autocast" && !a.train())
    throw Error("--precision bf16-autocast is a training step's (LibTorch's ops under autocast)");
  const std::string name = a.precision == "tf32" || a.precision == "bf16-autocast" ? "fp32" : a.precision;
  if (!a.train() && name == "bf16" && !bf16_weights_available())
    throw Error(
        "--precision bf16 reads the offset matrices as bfloat16 with AVX-512, which this CPU lacks; "
        "use --precision fp32");
  const DensePrecision precision = a.train()        ? parse_dense_precision(name)
                                   : name == "bf16" ? DensePrecision::Bf16
                                                    : DensePrecision::Fp32;
  return precision;
}

// How a training step runs: auto takes the device step where the trainer does (a GPU, or
// bf16-autocast) unless --compare alternates the host step's settings; graphed needs CUDA graphs.
std::string bench_train_step(const BenchArgs& a, const BenchOptions& options) {
  if (!a.train()) {
    if (a.given("--train-step")) throw Error("--train-step applies to --mode train");
    return "host";
  }
  const bool device_wanted = !options.device.is_cpu() || options.autocast_bf16;
  const std::string step = a.train_step != "auto"               ? a.train_step
                           : device_wanted && a.compare.empty() ? "device"
                                                                : "host";
  if (step != "host" && !a.compare.empty())
    throw Error("--compare alternates the host step's settings; use it with --train-step host");
  if (step == "host" && options.autocast_bf16)
    throw Error("--precision bf16-autocast runs the device step (--train-step device or graphed)");
  if (step == "graphed" && !(options.device.is_cuda() && cuda_graphs_supported()))
    throw Error(
        "--train-step graphed replays a CUDA graph: it needs --device cuda and a CUDA build of LibTorch 2");
  return step;
}

// The run's options for an infer or train run, computing under `engine`.
BenchOptions bench_options(const BenchArgs& a, const EngineOptions& engine) {
  const DensePrecision precision = engine.precision;
  BenchOptions options;
  options.config = a.model.config();
  options.engine = engine;
  options.mode = a.mode;
  options.batch = a.batch;
  options.device = parse_device(a.device);
  if (precision == DensePrecision::Bf16 && !options.device.is_cpu())
    throw Error(std::string("--precision bf16 runs on the CPU's ") +
                (a.train() ? "bfloat16 units" : "AVX-512") + "; on " + options.device.str() +
                " use --precision fp32");
  if (precision == DensePrecision::Bf16 && engine.projection == ProjectionAlgorithm::OffsetBatched)
    throw Error(
        "--algorithm offset-batched computes in fp32 (TF32 on a GPU); --precision bf16 runs the CPU "
        "kernels' bfloat16 products per matrix: use one or the other");
  if (a.precision == "tf32" && !options.device.is_cuda())
    throw Error("--precision tf32 runs on CUDA's tensor cores; on " + options.device.str() +
                " use fp32 or bf16");
  options.autocast_bf16 = a.precision == "bf16-autocast";
  options.train_step = bench_train_step(a, options);
  options.steps = a.steps > 0 ? a.steps : 10;
  options.warmup = a.warmup;
  // bfloat16 copies are read per matrix on the engine's row kernel, whatever the fp32
  // paths say: refused together, so that every reported field is what ran.
  const bool bf16_inference = !a.train() && (precision == DensePrecision::Bf16 || a.compare == "precision");
  if (bf16_inference && (a.kernels == "reference" || a.algorithm == "all-tokens" || a.compare == "kernels"))
    throw Error(
        "bf16 in inference reads the offset matrices' bfloat16 copies per matrix on the engine's row kernel; "
        "--kernels reference, --algorithm all-tokens and --compare kernels choose among fp32 paths "
        "(use them with --precision fp32)");
  return options;
}

// --compare X: the run's own setting of X against the other one, as the alternative's
// options, or a switch for a setting outside them (blas-threads).
// The optimizer is built once per run, so --compare kernels alternates everything else.
void set_compare(const BenchArgs& a, BenchOptions& options) {
  options.compare = a.compare;
  const std::string& x = a.compare;
  const EngineOptions& engine = options.engine;
  EngineOptions other = engine;
  if (x == "kernels") {
    other.reference = !engine.reference;
  } else if (x == "precision") {
    if (!options.device.is_cpu()) throw Error("--compare precision runs bf16 on the CPU; use --device cpu");
    other.precision = engine.precision == DensePrecision::Bf16 ? DensePrecision::Fp32 : DensePrecision::Bf16;
    const bool bf16 = other.precision == DensePrecision::Bf16;
    if (bf16 && a.train()) parse_dense_precision("bf16");  // names why not, if not
    if (bf16 && !a.train() && !bf16_weights_available())
      throw Error("--compare precision: bfloat16 weights need AVX-512, which this CPU lacks");
  } else if (x == "last-block") {
    other.cls_only_last_block = !engine.cls_only_last_block;
  } else if (x == "reassociation") {
    // The path applies to the last block's CLS query in a batch: otherwise both sides would be the same.
    if (a.last_block != "cls" || options.batch < 2)
      throw Error(
          "--compare reassociation times the last block's CLS query in a batch: it needs --batch 2 or "
          "more (a training batch split over the cores: 2 or more a core) and --last-block cls");
    other.query_reassociation = !engine.query_reassociation;
  } else if (x == "recompute") {
    other.recompute_pair_rows = !engine.recompute_pair_rows;
  } else if (x == "matrix-threads") {  // the alternative: no split, one thread
    other.matrix_threads = 1;
  } else if (x == "blas-threads") {
    if (blas_threads() == 0)
      throw Error("--compare blas-threads needs OpenBLAS, which this LibTorch does not use");
    // The alternative holds the other thread count while it runs; the run's own is read at its first step.
    auto other = std::make_shared<std::optional<ScopedBlasThreads>>();
    options.switch_path = [other](bool alternative) {
      other->reset();
      const int cores = int(std::max(2u, std::thread::hardware_concurrency()));
      if (alternative) other->emplace(blas_threads() == 1 ? cores : 1);
    };
    return;
  } else {
    return;  // split-batch: run_benchmark switches its own training threads (and says where it cannot)
  }
  options.alternative = other;
}

void check_bench_memory(const BenchArgs& a, const BenchOptions& options) {
  MemoryPlan plan;
  plan.config = options.config;
  plan.engine = options.engine;
  plan.training = a.train();
  plan.batch = options.batch;
  plan.recompute = a.recompute && options.compare != "recompute";  // --compare runs both: the larger
  plan.bf16_autocast = options.autocast_bf16;
  plan.batch_option = "--batch";
  plan.recompute_option = a.train() ? "--recompute" : "";
  plan.model_option = "--model";
  check_plan(a.force, plan, options.device);
}

void print_bench(const BenchResult& r, const BenchOptions& options) {
  const ViTConfig& c = options.config;
  const std::string bf16_note = r.precision == "bf16-autocast" ? ", LibTorch's ops under autocast to bf16"
                                : r.precision != "bf16"        ? ""
                                : options.mode == "train"      ? ", bf16 products (" + r.bf16_kernel + ")"
                                                               : ", bf16 offset matrices";
  std::printf("%s ViT-%s/%lld %lldx%lld, %s, batch %lld on %s (%d threads)%s\n", c.model.c_str(),
              c.preset.c_str(), (long long)c.patch, (long long)c.image_height, (long long)c.image_width,
              options.mode.c_str(), (long long)options.batch, r.device_name.c_str(), r.threads,
              bf16_note.c_str());
  std::printf("  %.2f ms/step (median of %d, best %.2f), %.1f images/s\n", r.ms_per_step, options.steps,
              r.ms_min, r.images_per_second);
  if (!options.compare.empty())
    std::printf("  alternating with the other --%s: %.2f ms/step (median of %d)\n", options.compare.c_str(),
                r.ms_per_step_alternative, options.steps);
  if (!r.train_step.empty() && r.train_step != "host")
    std::printf("  the step queued whole on the device%s, its report read once after it\n",
                r.train_step == "graphed" ? " and replayed as one CUDA graph" : "");
  if (r.graph_kernels >= 0)
    std::printf("  one replay launches %lld kernels (and %lld copies, memsets and events)\n",
                (long long)r.graph_kernels, (long long)r.graph_other_nodes);
  if (r.optimizer_ms >= 0)
    std::printf("  forward %.2f ms, backward %.2f ms, %s %.2f ms (medians)\n", r.forward_ms, r.backward_ms,
                r.train_step == "host" ? "optimizer" : "guard, clip and AdamW", r.optimizer_ms);
  if (r.peak_memory_bytes >= 0)
    std::printf("  peak memory %.1f MB (estimated %.1f MB)\n", r.peak_memory_bytes / 1e6,
                r.estimated_peak_bytes / 1e6);
  std::printf("  exact work %.2f GFLOP per image forward (last block: %s); achieved %.1f GFLOP/s\n",
              r.exact_flops_per_image / 1e9, r.cls_only_last_block ? "CLS query only" : "every token",
              r.achieved_gflops());
  std::printf(
      "  machine: GEMM %.0f GFLOP/s (%s), memory %.1f GB/s -> floor %.2f ms/step; reached %.0f%% of it\n",
      r.roofline.gemm_gflops, r.roofline.gemm_library == "onednn" ? "oneDNN" : "LibTorch's at::mm",
      r.roofline.bandwidth_gbs, r.floor_ms, 100 * r.fraction_of_floor);
  if (r.roofline.bf16_gemm_gflops > 0)
    std::printf("  the tensor cores' bf16 GEMM (8192^3): %.0f GFLOP/s; the run reached %.1f%% of it\n",
                r.roofline.bf16_gemm_gflops, 100 * r.achieved_gflops() / r.roofline.bf16_gemm_gflops);
  if (r.roofline.fma_peak_gflops > 0)
    std::printf(
        "  the cores' fp32 FMA peak (%s, no memory traffic): %.0f GFLOP/s; the GEMM reached %.0f%% of it, "
        "the step %.0f%%\n",
        r.roofline.fma_isa.c_str(), r.roofline.fma_peak_gflops,
        100 * r.roofline.gemm_gflops / r.roofline.fma_peak_gflops, 100 * r.fraction_of_fma_peak());
  if (!r.blas_core.empty()) std::printf("  OpenBLAS kernels: %s\n", r.blas_core.c_str());
  if (r.cpu_steal >= 0)
    std::printf(
        "  CPU steal during the timed steps: %.1f%% of the machine's CPU time went to other guests%s\n",
        100 * r.cpu_steal, r.cpu_steal >= 0.05 ? " (a slow stretch: compare rows with --compare)" : "");
  if (const std::string hint = avx2_blas_hint(); !hint.empty() && options.device.is_cpu())
    std::printf("  note: %s\n", hint.c_str());
}

// The most frequent operators of a count, as "name n, name n, ...".
std::string frequent_operators(const OperatorCounts& c, size_t shown) {
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, n] : c.by_operator) order.push_back({-n, name});
  std::sort(order.begin(), order.end());
  std::string text;
  for (size_t i = 0; i < order.size() && i < shown; ++i) {
    const std::string& name = order[i].second;
    const size_t scope = name.find("::");
    text += (i ? ", " : "") + (scope == std::string::npos ? name : name.substr(scope + 2)) + " " +
            std::to_string(-order[i].first);
  }
  return text;
}

nlohmann::ordered_json counts_json(const OperatorCounts& c) {
  return {{"forward", c.forward},
          {"backward", c.backward},
          {"optimizer", c.optimizer},
          {"total", c.total()},
          {"host_syncs", c.host_syncs},
          {"data_dependent", c.data_dependent},
          {"index_plans_made", c.index_plans_made},
          {"by_operator", c.by_operator}};
}

// --count-ops in inference: one forward as the studio predicts, every layer's attention kept.
int count_inference_ops(const BenchArgs& a, const EngineOptions& engine, const ViTConfig& config) {
  const OperatorCounts c = count_inference_operators(engine, config, a.batch, true);
  const char* algorithm = projection_algorithm_name(engine.projection);
  if (a.json) {
    const nlohmann::ordered_json out = {
        {"model", config.model}, {"preset", config.preset},  {"image", config.image_height},
        {"patch", config.patch}, {"algorithm", algorithm},   {"batch", a.batch},
        {"mode", "infer"},       {"forward", counts_json(c)}};
    std::cout << json_line(out) << std::endl;
    return 0;
  }
  std::printf(
      "LibTorch operators of one forward with every layer's attention, %s ViT-%s/%lld, batch %lld, "
      "--algorithm %s, LibTorch's ops as on a GPU\n",
      config.model.c_str(), config.preset.c_str(), (long long)config.patch, (long long)a.batch, algorithm);
  std::printf("  %lld operators; most frequent: %s\n", (long long)c.forward,
              frequent_operators(c, 16).c_str());
  std::printf("  host synchronisations %lld, data-dependent shapes %lld, index plans made %lld\n",
              (long long)c.host_syncs, (long long)c.data_dependent, (long long)c.index_plans_made);
  return 0;
}

// --count-ops: the operators of one training step, or one forward (--mode infer), on the path a
// GPU takes, counted on the CPU.
int count_ops(const BenchArgs& a, const EngineOptions& engine) {
  if (a.device != "cpu" && a.given("--device"))
    throw Error("--count-ops counts on the CPU the operators a GPU would launch: use --device cpu");
  const ViTConfig config = a.model.config();
  MemoryPlan plan;  // training: the larger of the two models the count trains, one after the other
  plan.config = config;
  plan.config.depth += a.train() ? 1 : 0;
  plan.engine = with(engine, &EngineOptions::reference, true);
  plan.training = a.train();
  plan.batch = a.batch;
  plan.batch_option = "--batch";
  plan.model_option = "--model";
  check_plan(a.force, plan, c10::Device(c10::kCPU));
  if (!a.train()) return count_inference_ops(a, engine, config);
  const TrainingOperatorCounts c = count_training_operators(engine, config, a.batch);
  const char* algorithm = projection_algorithm_name(engine.projection);
  if (a.json) {
    const nlohmann::ordered_json out = {{"model", config.model},         {"preset", config.preset},
                                        {"image", config.image_height},  {"patch", config.patch},
                                        {"algorithm", algorithm},        {"batch", a.batch},
                                        {"block", counts_json(c.block)}, {"step", counts_json(c.step)}};
    std::cout << json_line(out) << std::endl;
    return 0;
  }
  std::printf(
      "LibTorch operators of one training step, %s ViT-%s/%lld, --algorithm %s, LibTorch's ops as on a GPU\n",
      config.model.c_str(), config.preset.c_str(), (long long)config.patch, algorithm);
  std::printf("  one block      forward %lld, backward %lld: %lld\n", (long long)c.block.forward,
              (long long)c.block.backward, (long long)(c.block.forward + c.block.backward));
  std::printf("                 most frequent: %s\n", frequent_operators(c.block, 12).c_str());
  std::printf("  one step       forward %lld, backward %lld, guard, clip and AdamW %lld: %lld\n",
              (long long)c.step.forward, (long long)c.step.backward, (long long)c.step.optimizer,
              (long long)c.step.total());
  std::printf(
      "                 host synchronisations %lld, data-dependent shapes %lld, index plans made %lld\n",
      (long long)c.step.host_syncs, (long long)c.step.data_dependent, (long long)c.step.index_plans_made);
  return 0;
}

int bench(const BenchArgs& a) {
  EngineOptions engine = bench_engine_options(a);
  engine.precision = bench_precision(a);
  if (a.mode == "studio" && a.count_ops)
    throw Error("--count-ops counts a training step or one forward: use it with --mode train or infer");
  if (a.mode == "studio") return studio_bench(a, engine);
  if (a.count_ops) return count_ops(a, engine);
  BenchOptions options = bench_options(a, engine);
  if (!a.compare.empty()) set_compare(a, options);
  // One image: the studio's BLAS setting, one thread per GEMM. OpenBLAS's second
  // thread gives batch-1 products next to nothing; the engine splits them over the
  // cores itself (cpu/linear.h, --matrix-threads; docs/performance.md).
  if (options.mode == "infer" && options.batch == 1 && options.device.is_cpu()) configure_concurrent_blas();
  check_bench_memory(a, options);
  ProgressBar bar("bench " + options.config.model + " " + options.mode, !a.json);
  const bool tf32 = a.precision == "tf32";
  const ScopedTf32 tf32_products(tf32);  // the floor's GEMM is measured under it too
  BenchResult r = run_benchmark(options, [&](int step, int total) { bar.update(step, total); });
  if (tf32) r.precision = "tf32";
  bar.finish();
  if (a.json)
    std::cout << r.to_json() << std::endl;
  else
    print_bench(r, options);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& root, Runners& runners) {
  CLI::App* app = root.add_subcommand("bench", "time inference, a training step or the studio's path");
  auto o = std::make_shared<BenchArgs>();
  o->app = app;
  add_model_options(*app, o->model);
  add_choice(*app, "--mode", o->mode, {"infer", "train", "studio"}, "what to time");
  app->add_option("--batch", o->batch, "images per step")
      ->check(at_least("--batch", 1))
      ->capture_default_str();
  add_device(*app, o->device);
  app->add_option("--steps", o->steps, "timed steps (default 10; studio: canvas changes, 60)")
      ->check(in_range("--steps", 1, kMaxBenchSteps));
  app->add_option("--warmup", o->warmup, "untimed steps first")
      ->check(in_range("--warmup", 0, kMaxBenchSteps))
      ->capture_default_str();
  add_choice(*app, "--algorithm", o->algorithm, {"auto", "per-matrix", "all-tokens", "offset-batched"},
             "how relative projections run");
  app->add_flag("--recompute", o->recompute, "backward recomputes pair projections");
  add_choice(*app, "--last-block", o->last_block, {"cls", "all"},
             "the last block for the CLS query or every token");
  add_choice(*app, "--reassociation", o->reassociation, {"on", "off"},
             "a batch's CLS query meets unprojected inputs");
  add_choice(*app, "--kernels", o->kernels, {"engine", "reference"},
             "the engine's kernels or LibTorch's plain ops");
  add_choice(*app, "--precision", o->precision, {"fp32", "bf16", "bf16-autocast", "tf32"},
             "the products: bf16 on the engine's CPU kernels, bf16-autocast on LibTorch's ops (training)");
  add_choice(*app, "--train-step", o->train_step, {"auto", "host", "device", "graphed"},
             "training: values read as they come, queued whole, or replayed as a CUDA graph");
  add_matrix_threads(*app, o->matrix_threads);
  app->add_option("--split-batch", o->split_batch, "training: split each step's batch over the cores")
      ->type_name("auto|on|off")
      ->capture_default_str();
  add_choice(*app, "--compare", o->compare,
             {"kernels", "precision", "recompute", "last-block", "reassociation", "split-batch",
              "matrix-threads", "blas-threads"},
             "alternate steps with the other setting of this");
  app->add_option("--checkpoints", o->checkpoints, "studio: the models")->type_name("A.ckpt,B.ckpt");
  add_choice(*app, "--cuda-graph", o->cuda_graph, {"on", "off"},
             "studio: replay each forward as a CUDA graph");
  app->add_option("--data-dir", o->data_dir, "MNIST folder");
  app->add_flag("--force", o->force, kForceHelp);
  app->add_flag("--json", o->json, "print one JSON object");
  app->add_flag("--count-ops", o->count_ops,
                "count the LibTorch operators of one training step, or with --mode infer one forward with "
                "attention maps as the studio's, as on a GPU, instead of timing it");
  runners[app] = [o] { return bench(*o); };
}

}  // namespace translution::cli
