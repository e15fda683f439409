// `translution bench`
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/memory_check.h"
#include "cli/model_options.h"
#include "cli/progress_bar.h"
#include "data/canvas_dataset.h"
#include "data/mnist_provision.h"
#include "infer/predictor.h"
#include "cpu/blas_gemm.h"
#include "util/engine_options.h"
#include "cpu/bf16_gemm.h"
#include "cpu/bf16_weights.h"
#include "nn/vit.h"
#include "perf/benchmark.h"
#include "perf/studio_latency.h"
#include "util/json_writer.h"
#include "cpu/blas_kernels.h"
#include "util/device.h"
#include "train/training_threads.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "cpu/helper_threads.h"

namespace translution::cli {
namespace {

const std::string kBenchUsage = R"(usage: translution bench --model NAME [--preset A] [--image 84] [--patch 12]
                         [--mode infer|train] [--batch B] [--device auto|cpu|cuda]
                         [--steps 10] [--warmup 2] [--kernels engine|reference]
                         [--algorithm auto|per-matrix|all-tokens] [--recompute]
                         [--last-block cls|all] [--reassociation on|off]
                         [--precision fp32|bf16|tf32] [--matrix-threads auto|N]
                         [--split-batch auto|on|off]
                         [--compare kernels|precision|recompute|last-block|reassociation|
                                    split-batch|matrix-threads|blas-threads] [--force] [--json]

infer: one forward pass without gradients; train: forward, backward and an AdamW
step, sharing the cores as `translution train` does. Reports the median ms per
step, images/s, peak memory, the exact FLOPs per image and the fraction of this
machine's floor (GEMM rate and memory bandwidth measured in the same run).
--kernels reference   LibTorch's ops instead of the engine's CPU kernels
--algorithm           how relative projections are computed (default: by shape)
--recompute           backward recomputes the pair projections (less memory)
--last-block all      the last block for every token, not the CLS token alone
--reassociation off   the CLS query meets every token's projected keys and values
--precision bf16      bfloat16 products with fp32 sums (CPUs with AVX512-BF16 or AMX);
                      tf32: LibTorch's CUDA products as TF32
--matrix-threads      threads that share one model's work (auto: by shape)
--split-batch         whether a training step splits its batch over the cores
--compare X           alternate steps between X as given and its other setting in
                      one process; JSON ms_per_step_alternative is the other's
docs/performance.md says what each setting measured.

       translution bench --mode studio [--checkpoints A.ckpt,B.ckpt | --model NAME ...] [--steps 60]
                         [--device cpu|cuda] [--cuda-graph on|off] [--matrix-threads auto|N]
                         [--kernels engine|reference] [--json]

studio: the studio's prediction path. A test digit is dragged across the canvas;
each checkpoint (default: the bundled Translution and self-attention models; with
--model, one model of that config with fresh weights) predicts on its own thread
with attention maps on; the time until all are done is one canvas change's
latency. On CUDA each forward is replayed as a CUDA graph (--cuda-graph off: op by op).

)" + std::string(kForceHelp) + "\n";

const char* kStudioCheckpoints = "resources/models/translution.ckpt,resources/models/attention.ckpt";

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
std::vector<std::pair<std::string, Checkpoint>> studio_models(const Args& args, const c10::Device& device) {
  std::vector<std::pair<std::string, Checkpoint>> out;
  if (args.has("model")) {
    if (args.has("checkpoints")) throw Error("--model and --checkpoints each choose the studio's models: give one");
    Checkpoint fresh;
    fresh.config = config_from_args(args);
    MemoryPlan plan;
    plan.config = fresh.config;
    check_plan(args, plan, device);
    fresh.model = ViT(fresh.config);
    out.emplace_back(fresh.config.model + " (fresh weights)", std::move(fresh));
    return out;
  }
  const auto paths = split_commas(args.get("checkpoints", kStudioCheckpoints));
  check_checkpoints(args, paths, 1, "", device);
  for (const auto& path : paths) out.emplace_back(path, load_checkpoint(path));
  return out;
}

int studio_bench(const Args& args) {
  configure_concurrent_blas();  // as the studio does
  const c10::Device device = parse_device(args.get("device", "cpu"));
  const bool graphs = args.get_choice("cuda-graph", {"on", "off"}) == "on";
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<Predictor>> slots;
  std::vector<const Predictor*> views;
  for (auto& [name, checkpoint] : studio_models(args, device)) {
    paths.push_back(name);
    slots.push_back(std::make_unique<Predictor>(std::move(checkpoint), name, device, graphs));
    views.push_back(slots.back().get());
  }
  const MnistDigits test = load_mnist(args.get("data-dir", default_mnist_dir()), Split::Test);
  const int changes = int(args.get_int("steps", 60));
  std::vector<at::Tensor> canvases;
  for (int i = 0; i < changes; ++i) {  // the first test digit dragged corner to corner
    const int64_t at = int64_t(i) * 56 / std::max(1, changes - 1);
    canvases.push_back(compose_canvas(test.images[0], 84, {at, at}));
  }
  ProgressBar bar("studio latency", !args.flag("json"));
  const StudioLatency r = measure_studio_latency(views, canvases, [&](int d, int t) { bar.update(d, t); });
  bar.finish();
  if (args.flag("json")) {
    JsonWriter w;
    std::string graph_states;
    for (const auto& slot : slots) graph_states += (graph_states.empty() ? "" : ",") + slot->graph_state();
    w.add("mode", "studio").add("checkpoints", args.has("model") ? paths[0] : args.get("checkpoints", kStudioCheckpoints))
        .add("device", device.str()).add("forward", graph_states)
        .add("changes", int64_t(r.changes)).add("median_ms", r.median_ms).add("p90_ms", r.p90_ms).add("max_ms", r.max_ms)
        .add("slot_median_ms", r.slot_median_ms).add("threads", int64_t(at::get_num_threads()))
        .add("matrix_threads", int64_t(matrix_threads())).add("blas_threads", int64_t(blas_threads()))
        .add("sgemm", onednn_sgemm_applies() ? "onednn" : "blas")
        .add("blas_core", blas_core()).add("cpu_steal", r.cpu_steal);
    std::cout << w.str() << std::endl;
    return 0;
  }
  std::printf("studio inference path: %zu slots, %d canvas changes, attention maps on\n", slots.size(), r.changes);
  std::printf("  latency per change (all slots): median %.2f ms, 90th percentile %.2f ms, max %.2f ms\n", r.median_ms,
              r.p90_ms, r.max_ms);
  for (size_t s = 0; s < slots.size(); ++s)
    std::printf("  %s: median %.2f ms (%s; %s)\n", paths[s].c_str(), r.slot_median_ms[s], slots[s]->description().c_str(),
                slots[s]->graph_state().c_str());
  if (r.cpu_steal >= 0)
    std::printf("  CPU steal during the changes: %.1f%% of the machine's CPU time went to other guests\n",
                100 * r.cpu_steal);
  return 0;
}

}  // namespace

// The engine's options bench's flags ask for (EngineOptions).
EngineOptions bench_engine_options(const Args& args, bool studio, bool train_mode) {
  EngineOptions engine;
  engine.matrix_threads = matrix_threads_option(args, studio ? 1 : 0);
  engine.reference = args.get_choice("kernels", {"engine", "reference"}) == "reference";
  if (studio) return engine;
  engine.projection = parse_projection_algorithm(args.get("algorithm", "auto"));
  engine.recompute_pair_rows = args.flag("recompute");
  engine.cls_only_last_block = args.get_choice("last-block", {"cls", "all"}) == "cls";
  engine.query_reassociation = args.get_choice("reassociation", {"on", "off"}) == "on";
  if (args.has("split-batch") && !train_mode) throw Error("--split-batch applies to --mode train");
  engine.batch_split = parse_batch_split(args.get("split-batch", "auto"));
  return engine;
}

// The product precision bench's flags ask for; tf32 is fp32 to the engine's own
// products (LibTorch's CUDA products take TF32: util/device.h).
DensePrecision bench_precision(const Args& args, bool train_mode, bool& tf32) {
  const std::string choice = args.get_choice("precision", {"fp32", "bf16", "tf32"});
  tf32 = choice == "tf32";
  const std::string name = tf32 ? "fp32" : choice;
  // Training in bf16 needs bf16_gemm (parse_dense_precision says why not); a
  // forward without gradients reads bfloat16 weights on AVX-512 (cpu/bf16_weights.h).
  if (!train_mode && name == "bf16" &&
      (args.get("kernels", "engine") == "reference" || args.get("algorithm", "auto") == "all-tokens"))
    throw Error("bf16 in inference reads the offset matrices' bfloat16 copies per matrix on the engine's row kernel; "
                "--kernels reference and --algorithm all-tokens choose fp32 paths (use them with --precision fp32)");
  if (!train_mode && name == "bf16" && !bf16_weights_available())
    throw Error("--precision bf16 reads the offset matrices as bfloat16 with AVX-512, which this CPU lacks; "
                "use --precision fp32");
  return train_mode ? parse_dense_precision(name) : (name == "bf16" ? DensePrecision::Bf16 : DensePrecision::Fp32);
}

// --compare X: the callback that installs X's other setting while the alternating
// steps of the alternative run (options held for a scope, dropped for the other steps).
std::function<void(bool)> compare_engine_options(const std::string& compare, const EngineOptions& engine, int64_t batch) {
  EngineOptions other = engine;
  if (compare == "kernels") other.reference = !engine.reference;
  else if (compare == "recompute") other.recompute_pair_rows = !engine.recompute_pair_rows;
  else if (compare == "last-block") other.cls_only_last_block = !engine.cls_only_last_block;
  else if (compare == "matrix-threads") other.matrix_threads = 1;  // the alternative: no split, one thread
  else if (compare == "reassociation") {
    // The path applies to the last block's CLS query in a batch: otherwise both sides would be the same.
    if (!engine.cls_only_last_block || batch < 2)
      throw Error("--compare reassociation times the last block's CLS query in a batch: it needs --batch 2 or "
                  "more (a training batch split over the cores: 2 or more a core) and --last-block cls");
    other.query_reassociation = !engine.query_reassociation;
  } else
    return {};
  auto scope = std::make_shared<std::optional<ScopedEngineOptions>>();
  return [scope, other](bool alternative) {
    scope->reset();
    if (alternative) scope->emplace(other);
  };
}

// --compare precision: fp32 against bf16 products (CPU only), on the benchmark's thread.
std::function<void(bool)> compare_precision(DensePrecision precision, bool train_mode, const c10::Device& device) {
  if (!device.is_cpu()) throw Error("--compare precision runs bf16 on the CPU; use --device cpu");
  const DensePrecision other = precision == DensePrecision::Bf16 ? DensePrecision::Fp32 : DensePrecision::Bf16;
  if (other == DensePrecision::Bf16 && train_mode) parse_dense_precision("bf16");  // names why not, if not
  if (other == DensePrecision::Bf16 && !train_mode && !bf16_weights_available())
    throw Error("--compare precision: bfloat16 weights need AVX-512, which this CPU lacks");
  auto scope = std::make_shared<std::optional<ScopedDensePrecision>>();
  return [scope, other](bool alternative) {
    scope->reset();
    if (alternative) scope->emplace(other);
  };
}

// --compare blas-threads: OpenBLAS's threads per GEMM, one if the run has more,
// else one per core. The run's own count is read at its first step.
std::function<void(bool)> compare_blas_threads() {
  if (blas_threads() == 0) throw Error("--compare blas-threads needs OpenBLAS, which this LibTorch does not use");
  auto other = std::make_shared<std::optional<ScopedBlasThreads>>();
  return [other](bool alternative) {
    other->reset();
    const int cores = int(std::max(2u, std::thread::hardware_concurrency()));
    if (alternative) other->emplace(blas_threads() == 1 ? cores : 1);
  };
}

std::function<void(bool)> compare_switch(const std::string& compare, const EngineOptions& engine,
                                         DensePrecision precision, bool train_mode, const BenchOptions& options) {
  if (compare == "split-batch") return {};  // run_benchmark switches its own training threads
  if (compare == "precision") return compare_precision(precision, train_mode, options.device);
  if (compare == "blas-threads") return compare_blas_threads();
  if (auto path = compare_engine_options(compare, engine, options.batch)) return path;
  throw Error("unknown --compare '" + compare +
              "' (expected kernels, precision, recompute, last-block, reassociation, split-batch, matrix-threads "
              "or blas-threads)");
}

int bench_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kBenchUsage.c_str(), false)) return *status;
  const Args args(words, model_flags({"json", "recompute", "force"}),
                  model_options({"mode", "batch", "device", "steps", "warmup", "algorithm", "checkpoints", "data-dir",
                                 "last-block", "reassociation", "kernels", "precision", "matrix-threads", "cuda-graph",
                                 "split-batch", "compare"}));
  const bool studio = args.get("mode", "infer") == "studio";
  const bool train_mode = args.get("mode", "infer") == "train";
  if (studio && args.has("precision")) throw Error("--precision applies to --mode infer and --mode train");
  if (!studio && args.has("cuda-graph")) throw Error("--cuda-graph applies to --mode studio");
  const EngineOptions engine = bench_engine_options(args, studio, train_mode);
  const ScopedEngineOptions engine_scope(engine);
  bool tf32 = false;
  const DensePrecision precision = bench_precision(args, train_mode, tf32);
  const ScopedDensePrecision precision_scope(precision);
  if (studio) return studio_bench(args);
  BenchOptions options;
  options.config = config_from_args(args);
  options.mode = args.get("mode", "infer");
  options.batch = args.get_int("batch", 1);
  options.device = parse_device(args.get("device", "cpu"));
  if (precision == DensePrecision::Bf16 && !options.device.is_cpu())
    throw Error(std::string("--precision bf16 runs on the CPU's ") + (train_mode ? "bfloat16 units" : "AVX-512") +
                "; on " + options.device.str() + " use --precision fp32");
  if (tf32 && !options.device.is_cuda())
    throw Error("--precision tf32 runs on CUDA's tensor cores; on " + options.device.str() + " use fp32 or bf16");
  options.steps = int(args.get_int("steps", 10));
  options.warmup = int(args.get_int("warmup", 2));
  if (args.has("compare")) {
    options.compare = args.get("compare");
    options.switch_path = compare_switch(options.compare, engine, precision, train_mode, options);
  }
  // One image: the studio's BLAS setting, one thread per GEMM. OpenBLAS's second
  // thread gives batch-1 products next to nothing; the engine splits them over the
  // cores itself (cpu/linear.h, --matrix-threads; docs/performance.md).
  if (options.mode == "infer" && options.batch == 1 && options.device.is_cpu()) configure_concurrent_blas();
  MemoryPlan plan;
  plan.config = options.config;
  plan.training = train_mode;
  plan.batch = options.batch;
  plan.recompute = args.flag("recompute") && options.compare != "recompute";  // --compare runs both: the larger
  plan.batch_option = "--batch";
  plan.recompute_option = train_mode ? "--recompute" : "";
  plan.model_option = "--model";
  check_plan(args, plan, options.device);
  ProgressBar bar("bench " + options.config.model + " " + options.mode, !args.flag("json"));
  const ScopedTf32 tf32_products(tf32);  // the floor's GEMM is measured under it too
  BenchResult r = run_benchmark(options, [&](int step, int total) { bar.update(step, total); });
  if (tf32) r.precision = "tf32";
  bar.finish();
  if (args.flag("json")) {
    std::cout << r.to_json() << std::endl;
    return 0;
  }
  const std::string bf16_note = r.precision != "bf16"       ? ""
                                : options.mode == "train" ? std::string(", bf16 products (") + bf16_gemm_kernel() + ")"
                                                          : ", bf16 offset matrices";
  std::printf("%s ViT-%s/%lld %lldx%lld, %s, batch %lld on %s (%d threads)%s\n", options.config.model.c_str(),
              options.config.preset.c_str(), (long long)options.config.patch, (long long)options.config.image_height,
              (long long)options.config.image_width, options.mode.c_str(), (long long)options.batch,
              r.device_name.c_str(), r.threads, bf16_note.c_str());
  std::printf("  %.2f ms/step (median of %d, best %.2f), %.1f images/s\n", r.ms_per_step, options.steps, r.ms_min,
              r.images_per_second);
  if (!options.compare.empty())
    std::printf("  alternating with the other --%s: %.2f ms/step (median of %d)\n", options.compare.c_str(),
                r.ms_per_step_alternative, options.steps);
  if (r.optimizer_ms >= 0)
    std::printf("  forward %.2f ms, backward %.2f ms, optimizer %.2f ms (medians)\n", r.forward_ms, r.backward_ms,
                r.optimizer_ms);
  if (r.peak_memory_bytes >= 0) std::printf("  peak memory %.1f MB\n", r.peak_memory_bytes / 1e6);
  std::printf("  exact work %.2f GFLOP per image forward (last block: %s); achieved %.1f GFLOP/s\n",
              r.exact_flops_per_image / 1e9, r.cls_only_last_block ? "CLS query only" : "every token",
              r.achieved_gflops());
  std::printf("  machine: GEMM %.0f GFLOP/s (%s), memory %.1f GB/s -> floor %.2f ms/step; reached %.0f%% of it\n",
              r.roofline.gemm_gflops, r.roofline.gemm_library == "onednn" ? "oneDNN" : "LibTorch's at::mm",
              r.roofline.bandwidth_gbs, r.floor_ms, 100 * r.fraction_of_floor);
  if (r.roofline.fma_peak_gflops > 0)
    std::printf("  the cores' fp32 FMA peak (%s, no memory traffic): %.0f GFLOP/s; the GEMM reached %.0f%% of it, "
                "the step %.0f%%\n",
                r.roofline.fma_isa.c_str(), r.roofline.fma_peak_gflops,
                100 * r.roofline.gemm_gflops / r.roofline.fma_peak_gflops, 100 * r.fraction_of_fma_peak());
  if (!r.blas_core.empty()) std::printf("  OpenBLAS kernels: %s\n", r.blas_core.c_str());
  if (r.cpu_steal >= 0)
    std::printf("  CPU steal during the timed steps: %.1f%% of the machine's CPU time went to other guests%s\n",
                100 * r.cpu_steal, r.cpu_steal >= 0.05 ? " (a slow stretch: compare rows with --compare)" : "");
  if (const std::string hint = avx2_blas_hint(); !hint.empty() && options.device.is_cpu())
    std::printf("  note: %s\n", hint.c_str());
  return 0;
}

}  // namespace translution::cli
