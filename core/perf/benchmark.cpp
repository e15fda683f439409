#include "perf/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "cpu/allocator.h"
#include "cpu/avx512_gemm.h"
#include "cpu/bf16_gemm.h"
#include "cpu/bf16_weights.h"
#include "cpu/blas_gemm.h"
#include "cpu/blas_kernels.h"
#include "cpu/fused_adamw.h"
#include "cpu/helper_threads.h"
#include "nn/memory_estimate.h"
#include "nn/model_cost.h"
#include "nn/vit.h"
#include "train/device_step.h"
#include "train/forward_backward.h"
#include "train/graphed_train_step.h"
#include "train/release_gradients.h"
#include "train/training_threads.h"
#include "util/cpu_steal.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/fma_peak.h"

namespace translution {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename F>
double best_time(const c10::Device& device, int repeats, F&& f) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    synchronize(device);
    const auto t0 = Clock::now();
    f();
    synchronize(device);
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// A GPU's tensor cores in bf16: an 8192^3 product, large enough that they, not the
// launch, set the time. -1 where its 384 MB do not fit beside the run.
double bf16_gemm_rate(const c10::Device& device) {
  const int64_t m = 8192;
  const auto bf16 = at::TensorOptions().device(device).dtype(at::kBFloat16);
  try {
    const at::Tensor x = at::randn({m, m}, bf16), y = at::randn({m, m}, bf16);
    at::Tensor z = at::empty({m, m}, bf16);
    at::mm_out(z, x, y);  // warm-up
    return 2.0 * m * m * m / best_time(device, 3, [&] { at::mm_out(z, x, y); }) / 1e9;
  } catch (const c10::Error&) {  // out of device memory: the rate is left unmeasured
    return -1;
  }
}

}  // namespace

Roofline measure_roofline(const c10::Device& device) {
  at::NoGradGuard no_grad;
  // The machine's limits: the copy and the GEMM use every core, whatever the run used.
  const int threads = at::get_num_threads(), cores = int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(cores);
  const ScopedBlasThreads all_cores(cores);
  Roofline r;
  const int64_t n = 2048;
  const auto opts = at::TensorOptions().device(device).dtype(at::kFloat);
  const at::Tensor a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
  at::Tensor c = at::empty({n, n}, opts);
  at::mm_out(c, a, b);  // warm-up
  r.gemm_gflops = 2.0 * n * n * n / best_time(device, 3, [&] { at::mm_out(c, a, b); }) / 1e9;
  r.gemm_library = "aten";
  // The engine's larger products run on oneDNN where LibTorch links it, faster than
  // OpenBLAS: the machine's limit is the faster library's (docs/performance.md,
  // "Large products: oneDNN's sgemm").
  if (device.is_cpu() && onednn_sgemm_available()) {
    const float *ap = a.data_ptr<float>(), *bp = b.data_ptr<float>();
    float* cp = c.data_ptr<float>();
    if (onednn_sgemm_on_threads(cores, n, n, n, ap, bp, cp)) {  // warm-up
      const double rate = 2.0 * n * n * n /
                          best_time(device, 3, [&] { onednn_sgemm_on_threads(cores, n, n, n, ap, bp, cp); }) /
                          1e9;
      if (rate > r.gemm_gflops) {
        r.gemm_gflops = rate;
        r.gemm_library = "onednn";
      }
    }
  }
  const int64_t floats = 64 << 20;  // 256 MB
  const at::Tensor src = at::ones({floats}, opts);
  at::Tensor dst = at::empty({floats}, opts);
  dst.copy_(src);
  r.bandwidth_gbs = 2.0 * 4.0 * double(floats) / best_time(device, 3, [&] { dst.copy_(src); }) / 1e9;
  if (device.is_cuda()) r.bf16_gemm_gflops = bf16_gemm_rate(device);
  if (device.is_cpu()) {
    const FmaPeak peak = measure_fma_peak(cores);
    r.fma_peak_gflops = peak.gflops;
    r.fma_isa = peak.isa;
  }
  at::set_num_threads(threads);
  return r;
}

namespace {

// The run's settings, as its own options hold them.
BenchResult describe_run(const BenchOptions& options) {
  if (options.mode != "infer" && options.mode != "train")
    throw Error("--mode must be infer or train, got '" + options.mode + "'");
  if (options.batch < 1) throw Error("--batch must be at least 1, got " + std::to_string(options.batch));
  if (options.steps < 1) throw Error("--steps must be at least 1");
  BenchResult result;
  result.options = options;
  result.threads = at::get_num_threads();
  const EngineOptions& engine = options.engine;
  result.algorithm = projection_algorithm_name(engine.projection);
  result.recompute = engine.recompute_pair_rows;
  result.cls_only_last_block = engine.cls_only_last_block;
  result.reassociation = engine.query_reassociation;
  // The engine's kernels, or LibTorch's ops for all of these (the reference).
  result.kernels = engine.reference ? "reference" : "engine";
  result.blas_gemm = !engine.reference;
  result.avx512_gemm = !engine.reference && avx512_gemm_available();
  result.pair_kernels = engine.reference ? "aten" : "lanes";
  result.fused_inference = !engine.reference;
  result.training_kernels = !engine.reference;
  result.grouped_projections = !engine.reference;
  result.precision = options.autocast_bf16 ? "bf16-autocast" : dense_precision_name(engine.precision);
  result.train_step = options.mode == "train" ? options.train_step : "";
  if (options.mode == "train" && options.train_step != "host" && options.train_step != "device" &&
      options.train_step != "graphed")
    throw Error("--train-step must be host, device or graphed, got '" + options.train_step + "'");
  result.matrix_threads = matrix_threads(engine);
  result.freed_memory = freed_memory_name(freed_memory());
  result.device_name = device_description(options.device);
  result.blas_core = translution::blas_core();
  return result;
}

// One benchmark's model, data and optimizer, and how one step runs.
struct BenchRun {
  const BenchOptions& options;
  ViT model;
  bool train;
  std::optional<TrainingThreads> training_threads;  // training shares the cores as `translution train` does
  at::Tensor images, labels;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::optional<Bf16Weights> bf16_weights;  // made before the steps, so that no timed step pays for the copy
  std::unique_ptr<DeviceStep> device_step;  // train_step "device" or "graphed"
  std::unique_ptr<GraphedTrainStep> graphed_step;  // captured by the first step
  std::vector<double> phase_ms[3];                 // training steps are timed by phase too
  bool alternative = false;                        // the next steps run under options.alternative

  explicit BenchRun(const BenchOptions& o) : options(o), model(o.config), train(o.mode == "train") {
    model->to(o.device);
    if (train) training_threads.emplace(o.engine, model, o.device);
    const ViTConfig& c = o.config;
    const auto opts = at::TensorOptions().device(o.device);
    images = at::randn({o.batch, c.channels, c.image_height, c.image_width}, opts);
    labels = at::randint(c.classes, {o.batch}, opts.dtype(at::kLong));
    const auto adamw = torch::optim::AdamWOptions(3e-4).weight_decay(0.05);
    optimizer = make_adamw(o.engine, model->parameters(), adamw);
    if (train && o.train_step != "host")
      device_step = std::make_unique<DeviceStep>(o.engine, model, *optimizer, 1.0, o.autocast_bf16);
    if (train)
      model->train();
    else
      model->eval();
    if (!train && (o.engine.precision == DensePrecision::Bf16 || o.compare == "precision")) {
      bf16_weights.emplace(relative_banks(*model));
      if (bf16_weights->banks() == 0)
        throw Error(std::string(o.compare == "precision" ? "--compare precision" : "--precision bf16") +
                    " in inference reads offset matrices whose width is a multiple of 32 as bfloat16; " +
                    c.model + " has none (use --precision fp32)");
    }
  }
  int batch_shares() const { return train ? training_threads->batch_shares() : 1; }
  // The options the next step runs under.
  EngineOptions engine() const {
    return alternative && options.alternative ? *options.alternative : options.engine;
  }

  void step(bool timed) {
    EngineOptions engine = this->engine();
    if (!train) {
      at::NoGradGuard no_grad;
      // bf16 in inference: the offset matrices read from bfloat16 copies.
      engine.bf16_weights = engine.precision == DensePrecision::Bf16 ? &*bf16_weights : nullptr;
      model->forward(engine, images);
      return;
    }
    auto t = Clock::now();
    auto lap = [&](int phase) {  // the device synchronised between phases
      synchronize(options.device);
      if (timed) phase_ms[phase].push_back(seconds_since(t) * 1e3);
      t = Clock::now();
    };
    if (device_step) return queue_device_step(lap);
    release_gradients(*optimizer);
    forward_backward(engine, model, images, labels, training_threads->batch_shares(), [&] { lap(0); });
    lap(1);
    optimizer->step();
    lap(2);
  }

  // The device step, its phases timed where it runs eagerly (a graph's replay is one launch).
  template <typename Lap>
  void queue_device_step(Lap& lap) {
    if (options.train_step == "graphed" && !graphed_step)
      graphed_step = std::make_unique<GraphedTrainStep>(*device_step, images, labels);
    device_step->set_lr(3e-4);
    if (graphed_step) {
      device_step->finish(graphed_step->run(images, labels));
      return;
    }
    const at::Tensor report = device_step->run(images, labels, [&](StepPart part) {
      if (part != StepPart::Forward) lap(part == StepPart::Backward ? 0 : 1);
    });
    device_step->finish(report);
    lap(2);
  }
};

// The switch between the run's path and the alternative; split-batch is the training threads'.
std::function<void(bool)> compare_switch(BenchRun& run) {
  const BenchOptions& options = run.options;
  const std::string& compare = options.compare;
  if (compare == "split-batch") {
    if (!run.train || !run.training_threads->split_possible())
      throw Error(std::string("--compare split-batch needs --mode train on ") + kBatchSplitNeeds);
    return [&threads = run.training_threads, split = run.batch_shares() > 1](bool alternative) {
      threads->set_split(alternative != split);
    };
  }
  // These switch how one step's products split; with the batch split each half keeps to one core.
  if (run.batch_shares() > 1 && (compare == "matrix-threads" || compare == "blas-threads"))
    throw Error("--compare " + compare + " changes how a step's products split over the cores, but " +
                options.config.model + "'s batch is split (each half on one core): add --split-batch off");
  if (options.alternative) return [&run](bool alternative) { run.alternative = alternative; };
  return options.switch_path;
}

double median(std::vector<double> v) {
  if (v.empty()) return -1.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Warm-up and timed steps (alternating with the alternative's where comparing): the medians,
// the CPU steal and the peak memory into `result`.
void time_steps(BenchRun& run, const std::function<void(bool)>& switch_path, const BenchProgress& progress,
                BenchResult& result) {
  const BenchOptions& options = run.options;
  reset_peak_memory(options.device);
  const bool compare = bool(switch_path);
  const int total = (options.warmup + options.steps) * (compare ? 2 : 1);
  std::vector<double> times, alternative_times;
  std::optional<CpuTimes> cpu_before;
  for (int s = 0; s < total; ++s) {
    const bool alternative = compare && s % 2 == 1;
    const bool timed = s >= options.warmup * (compare ? 2 : 1);
    if (timed && !cpu_before) cpu_before = read_cpu_times();
    if (compare) switch_path(alternative);
    synchronize(options.device);
    const auto t0 = Clock::now();
    run.step(timed && !alternative);
    synchronize(options.device);
    if (timed) (alternative ? alternative_times : times).push_back(seconds_since(t0) * 1e3);
    if (progress) progress(s + 1, total);
  }
  result.cpu_steal = steal_fraction(cpu_before, read_cpu_times());
  if (compare) switch_path(false);
  result.peak_memory_bytes = peak_memory_bytes(options.device);
  if (compare) result.ms_per_step_alternative = median(alternative_times);
  result.forward_ms = median(run.phase_ms[0]);
  result.backward_ms = median(run.phase_ms[1]);
  result.optimizer_ms = median(run.phase_ms[2]);
  result.ms_per_step = median(times);
  result.ms_min = *std::min_element(times.begin(), times.end());
  result.images_per_second = double(options.batch) * 1e3 / result.ms_per_step;
}

// The work and weight traffic of what ran, against the machine's floor: with the CLS-only
// last block, its other queries' work is not done and the offset matrices they alone select
// are not read by forward or backward (AdamW still passes over every weight).
void count_work(const BenchOptions& options, int batch_shares, BenchResult& result) {
  const ModelCost cost = model_cost(options.engine, options.config);
  const bool cls_only = result.cls_only_last_block, train = options.mode == "train";
  // Each share of a split batch runs its own forward, and a share of one image
  // keeps the last block's plain products (nn/self_attention.h).
  double cls_only_macs = 0;
  for (const int64_t images : batch_share_sizes(options.batch, batch_shares))
    cls_only_macs += double(images) * (images > 1 ? cost.cls_only_batch_macs : cost.cls_only_macs);
  cls_only_macs /= double(options.batch);
  result.exact_flops_per_image = 2.0 * (cls_only ? cls_only_macs : cost.exact_macs);
  result.step_flops = result.exact_flops_per_image * double(options.batch) * (train ? 3.0 : 1.0);
  // Weights are read once per inference; training reads them forward and backward
  // and AdamW reads and writes weights, gradients and two moments: about 8 passes.
  const double params = double(result.parameters),
               unread = cls_only ? double(cost.cls_only_unread_weights) : 0.0;
  const double weight_bytes = 4.0 * (train ? 8.0 * params - 2.0 * unread : params - unread);
  result.floor_ms = 1e3 * std::max(result.step_flops / (result.roofline.gemm_gflops * 1e9),
                                   weight_bytes / (result.roofline.bandwidth_gbs * 1e9));
  result.fraction_of_floor = result.floor_ms / result.ms_per_step;
}

// The peak nn/memory_estimate predicts for this run, to set beside the measured one.
int64_t estimated_peak(const BenchOptions& o) {
  MemoryTarget target = memory_target(o.device.is_cuda() ? MemoryDevice::Cuda : MemoryDevice::Cpu);
  target.bf16_autocast = o.autocast_bf16;
  const MemoryEstimate e =
      o.mode == "train" ? estimate_training(o.engine, o.config, o.batch, o.engine.recompute_pair_rows, target)
                        : estimate_inference(o.engine, o.config, o.batch, target);
  return std::llround(e.total());
}

}  // namespace

BenchResult run_benchmark(const BenchOptions& options, const BenchProgress& progress) {
  BenchResult result = describe_run(options);
  at::manual_seed(0);
  BenchRun run(options);
  result.parameters = run.model->parameter_count();
  const std::function<void(bool)> switch_path = compare_switch(run);
  result.split_batch = run.batch_shares() > 1;
  result.blas_threads = blas_threads();
  // Whether this run's larger float products go to oneDNN. The alternative side of a
  // --compare that changes OpenBLAS's threads (blas-threads, split-batch) may differ.
  result.onednn_sgemm = !options.engine.reference && onednn_sgemm_applies();
  if (run.train && (options.engine.precision == DensePrecision::Bf16 || options.compare == "precision"))
    result.bf16_kernel = bf16_gemm_kernel(options.engine.bf16_tiles);
  time_steps(run, switch_path, progress, result);
  if (run.graphed_step) {
    result.graph_kernels = run.graphed_step->graph().kernels();
    result.graph_other_nodes = run.graphed_step->graph().other_nodes();
  }
  result.roofline = measure_roofline(options.device);  // after the run: its buffers must not count as peak
  count_work(options, result.split_batch ? run.batch_shares() : 1, result);
  result.estimated_peak_bytes = estimated_peak(options);
  return result;
}

double BenchResult::achieved_gflops() const { return step_flops / (ms_per_step * 1e6); }

double BenchResult::fraction_of_fma_peak() const {
  if (roofline.fma_peak_gflops <= 0 || ms_per_step <= 0) return -1;
  return achieved_gflops() / roofline.fma_peak_gflops;
}

namespace {

// A figure rounded to `decimals` places, as the text reports print it (null where not finite).
double rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::isfinite(value) ? std::round(value * scale) / scale : value;
}

}  // namespace

std::string BenchResult::to_json() const {
  const ViTConfig& c = options.config;
  const nlohmann::ordered_json out = {{"model", c.model},
                                      {"preset", c.preset},
                                      {"image", c.image_height},
                                      {"patch", c.patch},
                                      {"mode", options.mode},
                                      {"batch", options.batch},
                                      {"device", device_name},
                                      {"threads", threads},
                                      {"parameters", parameters},
                                      {"ms_per_step", rounded(ms_per_step, 3)},
                                      {"ms_min", rounded(ms_min, 3)},
                                      {"images_per_second", rounded(images_per_second, 2)},
                                      {"peak_memory_bytes", peak_memory_bytes},
                                      {"estimated_peak_bytes", estimated_peak_bytes},
                                      {"exact_flops_per_image", std::llround(exact_flops_per_image)},
                                      {"achieved_gflops", rounded(achieved_gflops(), 2)},
                                      {"gemm_gflops", rounded(roofline.gemm_gflops, 2)},
                                      {"bf16_gemm_gflops", rounded(roofline.bf16_gemm_gflops, 2)},
                                      {"fma_peak_gflops", rounded(roofline.fma_peak_gflops, 2)},
                                      {"fraction_of_fma_peak", rounded(fraction_of_fma_peak(), 4)},
                                      {"fma_isa", roofline.fma_isa},
                                      {"bandwidth_gbs", rounded(roofline.bandwidth_gbs, 2)},
                                      {"floor_ms", rounded(floor_ms, 3)},
                                      {"fraction_of_floor", rounded(fraction_of_floor, 4)},
                                      {"steps", options.steps},
                                      {"algorithm", algorithm},
                                      {"train_step", train_step},
                                      {"graph_kernels", graph_kernels},
                                      {"graph_other_nodes", graph_other_nodes},
                                      {"recompute", recompute},
                                      {"optimizer", kernels == "reference" ? "adamw" : "fused-adamw"},
                                      {"last_block", cls_only_last_block ? "cls" : "all"},
                                      {"split_batch", split_batch ? "on" : "off"},
                                      {"forward_ms", rounded(forward_ms, 3)},
                                      {"backward_ms", rounded(backward_ms, 3)},
                                      {"optimizer_ms", rounded(optimizer_ms, 3)},
                                      {"gemm", blas_gemm ? "raw" : "aten"},
                                      {"row_gemm", avx512_gemm ? "on" : "off"},
                                      {"pair_kernels", pair_kernels},
                                      {"inference_kernels", fused_inference ? "fused" : "aten"},
                                      {"training_kernels", training_kernels ? "fused" : "aten"},
                                      {"projections", grouped_projections ? "grouped" : "separate"},
                                      {"precision", precision},
                                      {"matrix_threads", matrix_threads},
                                      {"blas_threads", blas_threads},
                                      {"blas_core", blas_core},
                                      {"freed_memory", freed_memory},
                                      {"compare", options.compare},
                                      {"ms_per_step_alternative", rounded(ms_per_step_alternative, 3)},
                                      {"cpu_steal", rounded(cpu_steal, 4)},
                                      {"bf16_kernel", bf16_kernel},
                                      {"reassociation", reassociation ? "on" : "off"},
                                      {"sgemm", onednn_sgemm ? "onednn" : "blas"},
                                      {"gemm_library", roofline.gemm_library},
                                      {"kernels", kernels}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // file names need not be UTF-8
}

}  // namespace translution
