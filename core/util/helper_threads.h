#pragma once
// Splits one piece of CPU work over the cores with threads that outlive it.
// Starting a thread costs about 50 us on the 2-core machine, as much as one of
// the batch-1 GEMMs it would share (docs/benchmarks.md); these helpers start
// once, spin briefly after each part (the next one usually follows within
// microseconds), then sleep until woken.
#include <functional>

namespace translution {

// Runs body(part) for every part in [0, parts): part 0 on the calling thread,
// the others on helper threads, and returns when all are done. If the helpers
// are serving another caller (the studio's model slots run concurrently), the
// parts run one after another on the caller instead of crowding the cores. The
// first exception a part throws is rethrown here.
void run_parts(int parts, const std::function<void(int)>& body);

}  // namespace translution
