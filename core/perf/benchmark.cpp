#include "perf/benchmark.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "nn/model_cost.h"
#include "cpu/inference_passes.h"
#include "cpu/bf16_gemm.h"
#include "cpu/linear.h"
#include "cpu/bf16_weights.h"
#include "cpu/training_passes.h"
#include "cpu/pair_kernels.h"
#include "cpu/blas_gemm.h"
#include "cpu/avx512_gemm.h"
#include "util/engine_options.h"
#include "nn/self_attention.h"
#include "nn/vit.h"
#include "train/forward_backward.h"
#include "cpu/fused_adamw.h"
#include "train/release_gradients.h"
#include "train/training_threads.h"
#include "cpu/allocator.h"
#include "cpu/blas_kernels.h"
#include "util/cpu_steal.h"
#include "util/device.h"
#include "util/engine_options.h"
#include "util/error.h"
#include "util/fma_peak.h"
#include "cpu/helper_threads.h"

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
  // OpenBLAS here: the machine's limit is the faster library's (docs/performance.md).
  if (device.is_cpu() && onednn_sgemm_available()) {
    const float *ap = a.data_ptr<float>(), *bp = b.data_ptr<float>();
    float* cp = c.data_ptr<float>();
    if (onednn_sgemm_on_threads(cores, n, n, n, ap, bp, cp)) {  // warm-up
      const double rate =
          2.0 * n * n * n / best_time(device, 3, [&] { onednn_sgemm_on_threads(cores, n, n, n, ap, bp, cp); }) / 1e9;
      if (rate > r.gemm_gflops) r.gemm_gflops = rate, r.gemm_library = "onednn";
    }
  }
  const int64_t floats = 64 << 20;  // 256 MB
  const at::Tensor src = at::ones({floats}, opts);
  at::Tensor dst = at::empty({floats}, opts);
  dst.copy_(src);
  r.bandwidth_gbs = 2.0 * 4.0 * double(floats) / best_time(device, 3, [&] { dst.copy_(src); }) / 1e9;
  if (device.is_cpu()) {
    const FmaPeak peak = measure_fma_peak(cores);
    r.fma_peak_gflops = peak.gflops;
    r.fma_isa = peak.isa;
  }
  at::set_num_threads(threads);
  return r;
}

BenchResult run_benchmark(const BenchOptions& options, const BenchProgress& progress) {
  if (options.mode != "infer" && options.mode != "train")
    throw Error("--mode must be infer or train, got '" + options.mode + "'");
  if (options.batch < 1) throw Error("--batch must be at least 1, got " + std::to_string(options.batch));
  if (options.steps < 1) throw Error("--steps must be at least 1");
  BenchResult result;
  result.options = options;
  result.threads = at::get_num_threads();
  const EngineOptions& engine = engine_options();
  result.algorithm = projection_algorithm_name(engine.projection);
  result.recompute = engine.recompute_pair_rows;
  result.cls_only_last_block = engine.cls_only_last_block;
  result.reassociation = engine.query_reassociation;
  // The engine's kernels, or LibTorch's ops for all of these (the reference).
  result.kernels = engine.reference ? "reference" : "engine";
  result.blas_gemm = !engine.reference;
  result.avx512_gemm = avx512_gemm_available();
  result.pair_kernels = engine.reference ? "aten" : "lanes";
  result.fused_inference = !engine.reference;
  result.training_kernels = !engine.reference;
  result.grouped_projections = !engine.reference;
  result.precision = dense_precision_name(dense_precision());  // inference: bfloat16 offset matrices (below)
  result.matrix_threads = matrix_threads();
  result.freed_memory = freed_memory_name(freed_memory());
  result.device_name = device_description(options.device);

  const ViTConfig& c = options.config;
  at::manual_seed(0);
  ViT model(c);
  model->to(options.device);
  result.parameters = model->parameter_count();
  const bool train = options.mode == "train";
  // Training shares the cores as `translution train` does (train/training_threads.h).
  std::optional<TrainingThreads> training_threads;
  if (train) training_threads.emplace(model, options.device);
  std::function<void(bool)> switch_path = options.switch_path;
  if (options.compare == "split-batch") {
    if (!train || !training_threads->split_possible())
      throw Error(std::string("--compare split-batch needs --mode train on ") + kBatchSplitNeeds);
    switch_path = [&training_threads, split = training_threads->batch_shares() > 1](bool alternative) {
      training_threads->set_split(alternative != split);
    };
  }
  // These switch how one step's products split; with the batch split each half keeps to one core.
  if (train && training_threads->batch_shares() > 1 &&
      (options.compare == "matrix-threads" || options.compare == "blas-threads"))
    throw Error("--compare " + options.compare + " changes how a step's products split over the cores, but " +
                c.model + "'s batch is split (each half on one core): add --split-batch off");
  result.split_batch = train && training_threads->batch_shares() > 1;
  result.blas_threads = blas_threads();
  // Whether this run's larger float products go to oneDNN. The alternative side of a
  // --compare that changes OpenBLAS's threads (blas-threads, split-batch) may differ.
  result.onednn_sgemm = onednn_sgemm_applies();
  result.blas_core = translution::blas_core();
  if (train && (dense_precision() == DensePrecision::Bf16 || options.compare == "precision"))
    result.bf16_kernel = bf16_gemm_kernel();
  const auto opts = at::TensorOptions().device(options.device);
  const at::Tensor images = at::randn({options.batch, c.channels, c.image_height, c.image_width}, opts);
  const at::Tensor labels = at::randint(c.classes, {options.batch}, opts.dtype(at::kLong));
  const auto adamw = torch::optim::AdamWOptions(3e-4).weight_decay(0.05);
  std::unique_ptr<torch::optim::AdamW> optimizer_owner = make_adamw(model->parameters(), adamw);
  torch::optim::AdamW& optimizer = *optimizer_owner;
  if (train) model->train(); else model->eval();

  // Made before the steps, so that no timed step pays for the copy.
  std::optional<Bf16Weights> bf16_weights;
  if (!train && (dense_precision() == DensePrecision::Bf16 || options.compare == "precision")) {
    bf16_weights.emplace(*model);
    if (bf16_weights->banks() == 0)
      throw Error(std::string(options.compare == "precision" ? "--compare precision" : "--precision bf16") +
                  " in inference reads offset matrices whose width is a multiple of 32 as bfloat16; " + c.model +
                  " has none (use --precision fp32)");
  }
  // Training steps are timed by phase too (device synchronised between phases).
  std::vector<double> phase_ms[3];
  auto step = [&](bool timed) {
    if (train) {
      auto t = Clock::now();
      auto lap = [&](int phase) {
        synchronize(options.device);
        if (timed) phase_ms[phase].push_back(seconds_since(t) * 1e3);
        t = Clock::now();
      };
      release_gradients(optimizer);
      forward_backward(model, images, labels, training_threads->batch_shares(), [&] { lap(0); });
      lap(1);
      optimizer.step();
      lap(2);
    } else {
      at::NoGradGuard no_grad;
      // bf16 in inference: the offset matrices read from bfloat16 copies (below).
      const ScopedBf16Weights scope(dense_precision() == DensePrecision::Bf16 ? &*bf16_weights : nullptr);
      model->forward(images);
    }
  };

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
    step(timed && !alternative);
    synchronize(options.device);
    if (timed) (alternative ? alternative_times : times).push_back(seconds_since(t0) * 1e3);
    if (progress) progress(s + 1, total);
  }
  result.cpu_steal = steal_fraction(cpu_before, read_cpu_times());
  if (compare) switch_path(false);
  result.peak_memory_bytes = peak_memory_bytes(options.device);
  result.roofline = measure_roofline(options.device);  // after the run: its buffers must not count as peak
  auto median = [](std::vector<double> v) {
    if (v.empty()) return -1.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  if (compare) result.ms_per_step_alternative = median(alternative_times);
  result.forward_ms = median(phase_ms[0]);
  result.backward_ms = median(phase_ms[1]);
  result.optimizer_ms = median(phase_ms[2]);
  std::sort(times.begin(), times.end());
  result.ms_per_step = times[times.size() / 2];
  result.ms_min = times.front();
  result.images_per_second = double(options.batch) * 1e3 / result.ms_per_step;

  // The work and weight traffic of what ran: with the CLS-only last block, its
  // other queries' work is not done and the offset matrices they alone select are
  // not read by forward or backward (AdamW still passes over every weight).
  const ModelCost cost = model_cost(c);
  const bool cls_only = result.cls_only_last_block;
  // Each share of a split batch runs its own forward, and a share of one image
  // keeps the last block's plain products (nn/self_attention.h).
  double cls_only_macs = 0;
  for (const int64_t images :
       batch_share_sizes(options.batch, result.split_batch ? training_threads->batch_shares() : 1))
    cls_only_macs += double(images) * (images > 1 ? cost.cls_only_batch_macs : cost.cls_only_macs);
  cls_only_macs /= double(options.batch);
  result.exact_flops_per_image = 2.0 * (cls_only ? cls_only_macs : cost.exact_macs);
  result.step_flops = result.exact_flops_per_image * double(options.batch) * (train ? 3.0 : 1.0);
  // Weights are read once per inference; training reads them forward and backward
  // and AdamW reads and writes weights, gradients and two moments: about 8 passes.
  const double params = double(result.parameters), unread = cls_only ? double(cost.cls_only_unread_weights) : 0.0;
  const double weight_bytes = 4.0 * (train ? 8.0 * params - 2.0 * unread : params - unread);
  result.floor_ms = 1e3 * std::max(result.step_flops / (result.roofline.gemm_gflops * 1e9),
                                   weight_bytes / (result.roofline.bandwidth_gbs * 1e9));
  result.fraction_of_floor = result.floor_ms / result.ms_per_step;
  return result;
}

double BenchResult::achieved_gflops() const { return step_flops / (ms_per_step * 1e6); }

double BenchResult::fraction_of_fma_peak() const {
  if (roofline.fma_peak_gflops <= 0 || ms_per_step <= 0) return -1;
  return achieved_gflops() / roofline.fma_peak_gflops;
}

std::string BenchResult::to_json() const {
  const ViTConfig& c = options.config;
  char buffer[2048];
  std::snprintf(buffer, sizeof buffer,
                "{\"model\":\"%s\",\"preset\":\"%s\",\"image\":%lld,\"patch\":%lld,\"mode\":\"%s\",\"batch\":%lld,"
                "\"device\":\"%s\",\"threads\":%d,\"parameters\":%lld,\"ms_per_step\":%.3f,\"ms_min\":%.3f,"
                "\"images_per_second\":%.2f,\"peak_memory_bytes\":%lld,\"exact_flops_per_image\":%.0f,"
                "\"achieved_gflops\":%.2f,\"gemm_gflops\":%.2f,\"fma_peak_gflops\":%.2f,\"fraction_of_fma_peak\":%.4f,\"fma_isa\":\"%s\","
                "\"bandwidth_gbs\":%.2f,\"floor_ms\":%.3f,"
                "\"fraction_of_floor\":%.4f,\"steps\":%d,\"algorithm\":\"%s\",\"recompute\":%s,\"optimizer\":\"%s\","
                "\"last_block\":\"%s\",\"split_batch\":\"%s\",\"forward_ms\":%.3f,\"backward_ms\":%.3f,\"optimizer_ms\":%.3f,\"gemm\":\"%s\",\"row_gemm\":\"%s\","
                "\"pair_kernels\":\"%s\",\"inference_kernels\":\"%s\",\"training_kernels\":\"%s\",\"projections\":\"%s\",\"precision\":\"%s\","
                "\"matrix_threads\":%d,\"blas_threads\":%d,\"blas_core\":\"%s\",\"freed_memory\":\"%s\",\"compare\":\"%s\",\"ms_per_step_alternative\":%.3f,\"cpu_steal\":%.4f,"
                "\"bf16_kernel\":\"%s\",\"reassociation\":\"%s\",\"sgemm\":\"%s\",\"gemm_library\":\"%s\",\"kernels\":\"%s\"}",
                c.model.c_str(), c.preset.c_str(), (long long)c.image_height, (long long)c.patch, options.mode.c_str(),
                (long long)options.batch, device_name.c_str(), threads, (long long)parameters, ms_per_step, ms_min,
                images_per_second, (long long)peak_memory_bytes, exact_flops_per_image,
                achieved_gflops(), roofline.gemm_gflops, roofline.fma_peak_gflops,
                fraction_of_fma_peak(), roofline.fma_isa.c_str(), roofline.bandwidth_gbs, floor_ms,
                fraction_of_floor, options.steps, algorithm.c_str(), recompute ? "true" : "false",
                kernels == "reference" ? "adamw" : "fused-adamw", cls_only_last_block ? "cls" : "all", split_batch ? "on" : "off", forward_ms, backward_ms, optimizer_ms,
                blas_gemm ? "raw" : "aten", avx512_gemm ? "on" : "off", pair_kernels.c_str(),
                fused_inference ? "fused" : "aten", training_kernels ? "fused" : "aten", grouped_projections ? "grouped" : "separate", precision.c_str(), matrix_threads, blas_threads, blas_core.c_str(),
                freed_memory.c_str(), options.compare.c_str(), ms_per_step_alternative, cpu_steal, bf16_kernel.c_str(),
                reassociation ? "on" : "off", onednn_sgemm ? "onednn" : "blas", roofline.gemm_library.c_str(), kernels.c_str());
  return buffer;
}

}  // namespace translution
