#pragma once
// How long a canvas change takes to reach updated predictions in every slot of
// the studio: each slot's Predictor runs on its own thread (as the studio's slot
// workers do), with attention maps on; the latency of one change is the time
// until the slowest slot is done.
#include <functional>
#include <vector>

#include "infer/predictor.h"

namespace translution {

struct StudioLatency {
  int changes = 0;
  double median_ms = 0, p90_ms = 0, max_ms = 0;  // per canvas change, all slots
  std::vector<double> slot_median_ms;            // each slot alone
  std::vector<int64_t> slot_kernels;             // each slot's kernels per replayed forward (-1: not graphed)
  double cpu_steal =
      -1;  // the hypervisor's share of CPU time over the changes (util/cpu_steal.h; -1: unknown)
};

// `canvases`: [S, S] images in [0, 1], e.g. a digit dragged across the canvas.
StudioLatency measure_studio_latency(const std::vector<const Predictor*>& slots,
                                     const std::vector<at::Tensor>& canvases,
                                     const std::function<void(int, int)>& progress = {});

}  // namespace translution
