#include "perf/studio_latency.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>

#include "util/cpu_steal.h"
#include "util/error.h"

namespace translution {
namespace {

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

}  // namespace

StudioLatency measure_studio_latency(const std::vector<const Predictor*>& slots,
                                     const std::vector<at::Tensor>& canvases,
                                     const std::function<void(int, int)>& progress) {
  if (slots.empty() || canvases.empty())
    throw Error("the studio latency needs at least one slot and one canvas");
  for (const Predictor* slot : slots) slot->predict(canvases.front(), true);  // warm-up: allocations, caches
  std::vector<double> total;
  std::vector<std::vector<double>> per_slot(slots.size());
  const std::optional<CpuTimes> cpu_before = read_cpu_times();
  for (size_t i = 0; i < canvases.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    // One thread a slot, as the studio's pool runs them. A future hands a slot's exception
    // (out of memory, say) to this thread, and waits for its thread even when a later one
    // fails to start: nothing is left running, nothing ends the process.
    std::vector<std::future<double>> runs;
    std::vector<double> ms(slots.size());
    for (size_t s = 0; s < slots.size(); ++s)
      runs.push_back(std::async(std::launch::async,
                                [&, s] { return slots[s]->predict(canvases[i], true).milliseconds; }));
    for (size_t s = 0; s < slots.size(); ++s) ms[s] = runs[s].get();
    total.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    for (size_t s = 0; s < slots.size(); ++s) per_slot[s].push_back(ms[s]);
    if (progress) progress(int(i + 1), int(canvases.size()));
  }
  StudioLatency r;
  r.cpu_steal = steal_fraction(cpu_before, read_cpu_times());
  r.changes = int(canvases.size());
  r.median_ms = percentile(total, 0.5);
  r.p90_ms = percentile(total, 0.9);
  r.max_ms = *std::max_element(total.begin(), total.end());
  for (const auto& s : per_slot) r.slot_median_ms.push_back(percentile(s, 0.5));
  for (const Predictor* slot : slots) r.slot_kernels.push_back(slot->graph_kernels());
  return r;
}

}  // namespace translution
