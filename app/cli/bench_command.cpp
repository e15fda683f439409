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
#include "nn/fused_inference.h"
#include "nn/pair_kernels.h"
#include "nn/raw_gemm.h"
#include "nn/relative_ops.h"
#include "nn/row_gemm.h"
#include "nn/bf16_gemm.h"
#include "nn/bf16_weights.h"
#include "nn/dense.h"
#include "nn/training_kernels.h"
#include "nn/self_attention.h"
#include "nn/vit.h"
#include "perf/benchmark.h"
#include "perf/studio_latency.h"
#include "util/allocator.h"
#include "util/json_writer.h"
#include "util/blas_kernels.h"
#include "util/device.h"
#include "train/training_threads.h"
#include "util/error.h"
#include "util/helper_threads.h"

namespace translution::cli {
namespace {

const std::string kBenchUsage = R"(usage: translution bench --model NAME [--preset A] [--image 84] [--patch 12]
                         [--mode infer|train] [--batch B] [--device auto|cpu|cuda]
                         [--steps 10] [--warmup 2] [--algorithm auto|per-matrix|all-tokens] [--recompute]
                         [--last-block cls|all] [--reassociation on|off]
                         [--optimizer fused-adamw|adamw] [--gemm raw|aten]
                         [--row-gemm on|off] [--pair-kernels lanes|blocked|fused|aten]
                         [--inference-kernels fused|aten] [--training-kernels fused|aten]
                         [--projections grouped|separate] [--sgemm onednn|blas]
                         [--precision fp32|bf16|tf32]
                         [--matrix-threads auto|N] [--freed-memory pool|keep-all]
                         [--split-batch auto|on|off]
                         [--compare gemm|row-gemm|sgemm|pair-kernels|inference-kernels|
                                    training-kernels|projections|precision|recompute|last-block|
                                    reassociation|split-batch|matrix-threads|freed-memory|
                                    blas-threads] [--force] [--json]

infer: one forward pass without gradients (at batch 1 with the studio's one
BLAS thread per GEMM, the engine splitting the work over the cores); train:
forward, backward and an AdamW step (as `translution train` runs it: on two cores
self-attention and LoR with the batch split in two, one half per core, Translution
with one BLAS thread per GEMM and the engine's split of every product). Reports the
median ms per step, images/s, peak memory (resident set on CPU, allocator peak
on CUDA), the exact FLOPs per image, and the fraction of this
machine's floor (GEMM rate and memory bandwidth measured in the same run),
and how much of the machine's CPU time a hypervisor gave other guests while the
timed steps ran (steal, from /proc/stat; a virtual machine's slow stretches).
--algorithm forces how relative projections are computed (default: by shape);
--recompute trades time for memory (backward recomputes pair projections).
--last-block all computes the last block for every token, as the equations are
written, instead of for the CLS token alone (the default: only its output reaches
the head, so logits and gradients are the same; the exact work and weight traffic
reported are those of the setting that ran).
--reassociation off has the CLS query of self-attention and LoR, in a batch of two
or more, meet the projected keys and values of every token instead of the inputs
through its own key and value projections (the same outputs; for ViT-A/12, 4.6% more
work for self-attention, 2.8% for LoR).
--optimizer adamw uses LibTorch's AdamW instead of the engine's fused one;
--gemm aten sends the per-matrix products through at::mm instead of raw BLAS calls
(or, for one image's and every one of LoR's narrow matrices, the engine's row kernels);
--row-gemm off sends the per-matrix products of at most 64 rows (one image's),
one image's dense products, and every product of a matrix of at most 32 x 32
(LoR's, forward and backward, any batch) to the BLAS (or to oneDNN, --sgemm) instead of the engine's
AVX-512 kernels, whose forward products prefetch the next matrix (or strip of a
transposed weight) while they compute (on by default where the CPU has AVX-512);
--sgemm blas sends every float product the engine hands a BLAS to OpenBLAS;
onednn (the default where LibTorch links oneDNN, as Debian's does) sends those
of at least 2^19 multiply-adds that run on one thread each (OpenBLAS set to one
thread: a split training step, the engine's own splits, one image) to oneDNN's
sgemm, faster on the dense layers' products of a training step (JSON sgemm: the
run's own side; the other side of --compare blas-threads or split-batch, with
one BLAS thread where the run has more, or the reverse, uses the other library);
--pair-kernels blocked does the per-pair products, dot products and weighted sums
(and their gradients) inside each offset matrix's block of rows, while the rows
are in cache; lanes (the default) does the same with 16 images across the vector
lanes where they fill them (float, AVX-512, batches of 16, LoR's narrow matrices);
fused does the arithmetic in the engine's one-pass kernels over all pair rows,
aten as ATen expressions (--compare pair-kernels alternates lanes with blocked,
or the setting given with blocked);
--inference-kernels aten runs a forward without gradients as LibTorch's ops
instead of the engine's passes (LayerNorm per row; bias, GELU and residual
inside each dense layer's product; self-attention per head and block of rows);
--training-kernels aten runs GELU, LayerNorm and the attention softmax of a
forward that records gradients (and their backward) as LibTorch's ops, and
self-attention as its separate per-head functions, instead of the engine's
passes split over the cores;
--projections separate, in training, multiplies each of a LoR layer's projections
of the same input (shared and low-rank, q, k and v) as its own autograd node,
autograd summing their input gradients, instead of one node whose backward is one
product for the input's gradient and one for the weights' (grouped, the default);
--precision tf32 (CUDA) runs LibTorch's float products on the tensor cores as TF32, and
measures the floor's GEMM rate as TF32 too;
--precision bf16, in training, multiplies the dense layers and Translution's offset
matrices as bfloat16 with fp32 sums (mixed precision, as PyTorch's bf16
autocast; weights, optimizer and every other op stay fp32), on AMX tiles (Intel
Xeon from Sapphire Rapids on) or else AVX512-BF16 (AMD Zen 4 on, Intel Cooper
Lake), and the floor stays fp32's; in
inference it reads Translution's offset matrices from bfloat16 copies (half the
memory traffic; activations and sums stay fp32) and needs AVX-512;
--split-batch, in training, says whether each step's batch splits in two, each
core running the forward and backward of its half (auto, as `translution train`:
on a two-core CPU with OpenBLAS, for models whose weights take at most 64 MiB; on:
any model, an error where no split is possible; off: every product split over
the cores instead; with the split,
forward_ms is the first half's forward and backward_ms the rest of both halves);
--matrix-threads sets how many threads share one model's work: the per-matrix
GEMMs, one image's dense layers (by columns), the per-pair kernels and AdamW
(auto: the GEMMs split in two where the BLAS would keep each on one core, i.e.
every product when OpenBLAS has one thread per GEMM, or products under a million
multiply-adds; the element-wise passes use every core).
--freed-memory keep-all keeps every freed block in glibc's heap, where some
cannot be reused, instead of serving tensors of 16 MB and more from a pool of
their own (the default, pool; util/allocator.h).
--compare X alternates steps between X as given and its other setting (for
split-batch: split or not, the other of what the run does; for matrix-threads: one; for blas-threads, OpenBLAS's threads per GEMM: one if the
run has more, else one per core) in one process (a fair A/B on a noisy machine): JSON
ms_per_step is the former, ms_per_step_alternative the latter; peak memory
covers both.

       translution bench --mode studio [--checkpoints A.ckpt,B.ckpt | --model NAME ...] [--steps 60]
                         [--device cpu|cuda] [--cuda-graph on|off]
                         [--matrix-threads auto|N] [--row-gemm on|off] [--sgemm onednn|blas]
                         [--inference-kernels fused|aten] [--json]

studio: the studio's inference path. A test digit is dragged across the canvas;
for each position every checkpoint (default: the bundled Translution and
self-attention models; with --model, one model of that config with fresh
weights) predicts on its own thread with attention maps on, and
the time until all are done is one canvas change's latency. BLAS threads are set
as in the studio (one per GEMM unless $OPENBLAS_NUM_THREADS says otherwise), and so
are matrix threads (one: the slots already share the cores; --matrix-threads
overrides). On CUDA each slot's forward is replayed as a CUDA graph, as in the
studio (--cuda-graph off: launched op by op).

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
        .add("sgemm", raw_gemm_enabled() && onednn_sgemm_applies() ? "onednn" : "blas")
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

int bench_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kBenchUsage.c_str(), false)) return *status;
  const Args args(words, model_flags({"json", "recompute", "force"}),
                  model_options({"mode", "batch", "device", "steps", "warmup", "algorithm", "checkpoints", "data-dir",
                                 "optimizer", "last-block", "reassociation", "gemm", "row-gemm", "sgemm", "pair-kernels", "inference-kernels", "training-kernels", "projections",
                                 "precision", "matrix-threads", "cuda-graph",
                                 "freed-memory", "split-batch", "compare"}));
  const bool studio = args.get("mode", "infer") == "studio";
  const int threads = apply_matrix_threads(args, studio ? 1 : 0);
  const std::string row = args.get_choice("row-gemm", {"on", "off"});
  set_row_gemm_enabled(row == "on");
  const std::string sgemm = args.get_choice("sgemm", {"onednn", "blas"});
  if ((sgemm == "onednn" && args.has("sgemm")) || args.get("compare", "") == "sgemm")
    if (!onednn_sgemm_available())
      throw Error("--sgemm onednn and --compare sgemm need oneDNN's sgemm, which this LibTorch does not expose "
                  "(Debian's links libdnnl; PyTorch's own builds keep it hidden)");
  set_onednn_sgemm_enabled(sgemm == "onednn");
  const std::string inference_kernels = args.get_choice("inference-kernels", {"fused", "aten"});
  set_fused_inference(inference_kernels == "fused");
  const std::string training_kernels = args.get_choice("training-kernels", {"fused", "aten"});
  if (studio && args.has("training-kernels"))
    throw Error("--training-kernels applies to --mode train (the studio mode only predicts)");
  set_training_kernels(training_kernels == "fused");
  const std::string projections = args.get_choice("projections", {"grouped", "separate"});
  set_grouped_projections(projections == "grouped");
  if (studio && args.has("precision")) throw Error("--precision applies to --mode infer and --mode train");
  if (!studio && args.has("cuda-graph")) throw Error("--cuda-graph applies to --mode studio");
  // Training in bf16 needs bf16_gemm (parse_dense_precision says why not); a
  // forward without gradients reads bfloat16 weights on AVX-512 (nn/bf16_weights.h).
  const bool train_mode = args.get("mode", "infer") == "train";
  if (!train_mode && (args.has("projections") || args.get("compare", "") == "projections"))
    throw Error("--projections and --compare projections apply to --mode train (a forward without gradients "
                "always shares one split over the cores among a layer's projections)");
  // tf32 is fp32 to the engine's own products; LibTorch's CUDA products take TF32 (util/device.h).
  const std::string precision_choice = args.get_choice("precision", {"fp32", "bf16", "tf32"});
  const bool tf32 = precision_choice == "tf32";
  const std::string precision_name = tf32 ? "fp32" : precision_choice;
  if (!train_mode && precision_name == "bf16" && !bf16_weights_available())
    throw Error("--precision bf16 reads the offset matrices as bfloat16 with AVX-512, which this CPU lacks; "
                "use --precision fp32");
  const DensePrecision precision =
      train_mode ? parse_dense_precision(precision_name)
                 : (precision_name == "bf16" ? DensePrecision::Bf16 : DensePrecision::Fp32);
  set_dense_precision(precision);
  if (studio) return studio_bench(args);
  set_projection_algorithm(parse_projection_algorithm(args.get("algorithm", "auto")));
  set_recompute_pair_rows(args.flag("recompute"));
  const bool cls_only = args.get_choice("last-block", {"cls", "all"}) == "cls";
  set_cls_only_last_block(cls_only);
  const bool reassociation = args.get_choice("reassociation", {"on", "off"}) == "on";
  set_query_reassociation(reassociation);
  if (args.has("split-batch") && !train_mode) throw Error("--split-batch applies to --mode train");
  set_batch_split(parse_batch_split(args.get("split-batch", "auto")));
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
  options.fused_optimizer = args.get_choice("optimizer", {"fused-adamw", "adamw"}) == "fused-adamw";
  const std::string gemm = args.get_choice("gemm", {"raw", "aten"});
  set_raw_gemm_enabled(gemm == "raw");
  // bfloat16 copies are read per matrix on the engine's row kernel, whatever these
  // fp32 switches say: refused together, so that every reported field is what ran.
  const bool bf16_inference = !train_mode && (precision == DensePrecision::Bf16 || args.get("compare", "") == "precision");
  if (bf16_inference && (row == "off" || gemm == "aten" || args.get("algorithm", "auto") == "all-tokens" ||
                         args.get("compare", "") == "row-gemm" || args.get("compare", "") == "gemm"))
    throw Error("bf16 in inference reads the offset matrices' bfloat16 copies per matrix on the engine's row kernel; "
                "--row-gemm off, --gemm aten, --algorithm all-tokens and --compare row-gemm|gemm choose among fp32 "
                "paths (use them with --precision fp32)");
  const PairKernels pair_kernels = parse_pair_kernels(args.get_choice("pair-kernels", {"lanes", "blocked", "fused", "aten"}));
  set_pair_kernels(pair_kernels);
  // As the process started ($TRANSLUTION_KEEP_FREED_MEMORY) unless asked.
  if (args.has("freed-memory")) set_freed_memory(parse_freed_memory(args.get("freed-memory")));
  const FreedMemory freed = freed_memory();
  if (args.has("compare")) {
    options.compare = args.get("compare");
    const bool raw = gemm == "raw", recompute = args.flag("recompute");
    if (options.compare == "gemm")
      options.switch_path = [raw](bool alternative) { set_raw_gemm_enabled(alternative != raw); };
    else if (options.compare == "row-gemm")
      options.switch_path = [on = row == "on"](bool alternative) { set_row_gemm_enabled(alternative != on); };
    else if (options.compare == "sgemm")
      options.switch_path = [on = sgemm == "onednn"](bool alternative) { set_onednn_sgemm_enabled(alternative != on); };
    else if (options.compare == "pair-kernels")
      options.switch_path = [pair_kernels](bool alternative) {
        // Each setting against the one it refines: lanes or fused against blocked, blocked against lanes.
        const PairKernels other = pair_kernels == PairKernels::Blocked ? PairKernels::Lanes : PairKernels::Blocked;
        set_pair_kernels(alternative ? other : pair_kernels);
      };
    else if (options.compare == "inference-kernels")
      options.switch_path = [on = inference_kernels == "fused"](bool alternative) {
        set_fused_inference(alternative != on);
      };
    else if (options.compare == "projections")
      options.switch_path = [on = projections == "grouped"](bool alternative) { set_grouped_projections(alternative != on); };
    else if (options.compare == "training-kernels")
      options.switch_path = [on = training_kernels == "fused"](bool alternative) {
        set_training_kernels(alternative != on);
      };
    else if (options.compare == "precision") {
      if (!options.device.is_cpu()) throw Error("--compare precision runs bf16 on the CPU; use --device cpu");
      const DensePrecision other = precision == DensePrecision::Bf16 ? DensePrecision::Fp32 : DensePrecision::Bf16;
      if (other == DensePrecision::Bf16 && train_mode) parse_dense_precision("bf16");  // names why not, if not
      if (other == DensePrecision::Bf16 && !train_mode && !bf16_weights_available())
        throw Error("--compare precision: bfloat16 weights need AVX-512, which this CPU lacks");
      options.switch_path = [precision, other](bool alternative) { set_dense_precision(alternative ? other : precision); };
    } else if (options.compare == "last-block")
      options.switch_path = [cls_only](bool alternative) { set_cls_only_last_block(alternative != cls_only); };
    else if (options.compare == "reassociation") {
      // The path applies to the last block's CLS query in a batch: otherwise both sides would be the same.
      if (!cls_only || options.batch < 2)
        throw Error("--compare reassociation times the last block's CLS query in a batch: it needs --batch 2 or "
                    "more (a training batch split over the cores: 2 or more a core) and --last-block cls");
      options.switch_path = [reassociation](bool alternative) {
        set_query_reassociation(alternative != reassociation);
      };
    } else if (options.compare == "recompute")
      options.switch_path = [recompute](bool alternative) { set_recompute_pair_rows(alternative != recompute); };
    else if (options.compare == "split-batch") {
      // run_benchmark switches its own training threads (and says where it cannot)
    } else if (options.compare == "matrix-threads")  // the alternative: no split, one thread
      options.switch_path = [threads](bool alternative) { set_matrix_threads(alternative ? 1 : threads); };
    else if (options.compare == "freed-memory" && freed == FreedMemory::System)
      throw Error("--compare freed-memory switches between pool and keep-all; "
                  "TRANSLUTION_KEEP_FREED_MEMORY=0 left glibc's own policy, which cannot be switched back to");
    else if (options.compare == "freed-memory")
      options.switch_path = [freed](bool alternative) {
        const FreedMemory other = freed == FreedMemory::KeepAll ? FreedMemory::Pool : FreedMemory::KeepAll;
        set_freed_memory(alternative ? other : freed);
      };
    else if (options.compare == "blas-threads") {
      if (blas_threads() == 0) throw Error("--compare blas-threads needs OpenBLAS, which this LibTorch does not use");
      // The alternative holds the other thread count while it runs; the run's own is read at its first step.
      auto other = std::make_shared<std::optional<ScopedBlasThreads>>();
      options.switch_path = [other](bool alternative) {
        other->reset();
        const int cores = int(std::max(2u, std::thread::hardware_concurrency()));
        if (alternative) other->emplace(blas_threads() == 1 ? cores : 1);
      };
    } else
      throw Error("unknown --compare '" + options.compare +
                  "' (expected gemm, row-gemm, sgemm, pair-kernels, inference-kernels, training-kernels, projections, precision, recompute, last-block, reassociation, split-batch, matrix-threads, "
                  "freed-memory or blas-threads)");
  }
  // One image: the studio's BLAS setting, one thread per GEMM. OpenBLAS's second
  // thread gives batch-1 products next to nothing; the engine splits them over the
  // cores itself (nn/dense.h, --matrix-threads; docs/benchmarks.md).
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
