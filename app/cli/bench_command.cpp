// `translution bench`
#include <cstdio>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/progress_bar.h"
#include "nn/relative_ops.h"
#include "perf/benchmark.h"
#include "util/device.h"

namespace translution::cli {
namespace {

const char* kBenchUsage = R"(usage: translution bench --model NAME [--preset A] [--image 84] [--patch 12]
                         [--mode infer|train] [--batch B] [--device auto|cpu|cuda]
                         [--steps 10] [--warmup 2] [--algorithm auto|per-matrix|all-tokens] [--recompute] [--json]

infer: one forward pass without gradients; train: forward, backward and an AdamW
step. Reports the median ms per step, images/s, peak memory (resident set on CPU,
allocator peak on CUDA), the exact FLOPs per image, and the fraction of this
machine's floor (GEMM rate and memory bandwidth measured in the same run).
--algorithm forces how relative projections are computed (default: by shape);
--recompute trades time for memory (backward recomputes pair projections).
)";

}  // namespace

int bench_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kBenchUsage, false)) return *status;
  const Args args(words, model_flags({"json", "recompute"}), model_options({"mode", "batch", "device", "steps", "warmup", "algorithm"}));
  set_projection_algorithm(parse_projection_algorithm(args.get("algorithm", "auto")));
  set_recompute_pair_rows(args.flag("recompute"));
  BenchOptions options;
  options.config = config_from_args(args);
  options.mode = args.get("mode", "infer");
  options.batch = args.get_int("batch", 1);
  options.device = parse_device(args.get("device", "cpu"));
  options.steps = int(args.get_int("steps", 10));
  options.warmup = int(args.get_int("warmup", 2));
  ProgressBar bar("bench " + options.config.model + " " + options.mode, !args.flag("json"));
  const BenchResult r = run_benchmark(options, [&](int step, int total) { bar.update(step, total); });
  bar.finish();
  if (args.flag("json")) {
    std::cout << r.to_json() << std::endl;
    return 0;
  }
  std::printf("%s ViT-%s/%lld %lldx%lld, %s, batch %lld on %s (%d threads)\n", options.config.model.c_str(),
              options.config.preset.c_str(), (long long)options.config.patch, (long long)options.config.image_height,
              (long long)options.config.image_width, options.mode.c_str(), (long long)options.batch,
              r.device_name.c_str(), r.threads);
  std::printf("  %.2f ms/step (median of %d, best %.2f), %.1f images/s\n", r.ms_per_step, options.steps, r.ms_min,
              r.images_per_second);
  if (r.peak_memory_bytes >= 0) std::printf("  peak memory %.1f MB\n", r.peak_memory_bytes / 1e6);
  std::printf("  exact work %.2f GFLOP per image forward; achieved %.1f GFLOP/s\n", r.exact_flops_per_image / 1e9,
              r.step_flops / (r.ms_per_step * 1e6));
  std::printf("  machine: GEMM %.0f GFLOP/s, memory %.1f GB/s -> floor %.2f ms/step; reached %.0f%% of it\n",
              r.roofline.gemm_gflops, r.roofline.bandwidth_gbs, r.floor_ms, 100 * r.fraction_of_floor);
  return 0;
}

}  // namespace translution::cli
