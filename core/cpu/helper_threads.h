#pragma once
// Splits one piece of CPU work over the cores with threads that outlive it.
// Starting a thread per split costs more than the batch-1 GEMMs it would share,
// while a running thread makes them faster (docs/performance.md, "Threads on two
// cores"). These helpers start once, spin briefly after each part
// (the next one usually follows within microseconds), then sleep until woken.
#include <cstdint>
#include <functional>

#include "util/engine_options.h"

namespace translution {

// How many threads share one model's work: the options' matrix_threads (the
// --matrix-threads knob; 1 for each share of a training step split by images,
// which already keeps every core busy). 0 (the default) decides by shape: the
// per-matrix loops and the dense layers split in two where the BLAS would keep
// each product on one core (every product where OpenBLAS threads no GEMM;
// per-matrix products under a million multiply-adds), else leave GEMMs to the
// BLAS's own threads; the per-pair kernels and the optimizer's pass use every
// core. The studio sets 1: its model slots already keep the cores busy.
int matrix_threads(const EngineOptions& engine);
// The cores the helpers may use when nothing is forced: every core, but one where
// LibTorch's own intra-op threads are on ($TRANSLUTION_THREADS above 1): their
// spinning OpenMP workers and the helpers would take turns at the same cores
// (docs/performance.md, "Threads on two cores").
int free_cores();
// Whether the engine splits large products over the cores itself: where OpenBLAS
// threads no GEMM (one BLAS thread: then no spinning BLAS workers take the second
// core between products) and two cores are free.
bool engine_splits_products();
// Parts for independent GEMMs of at most `multiply_adds` each (the per-matrix
// loops, self-attention's per-head products in training): matrix_threads()
// when set, else two where the BLAS would keep each product on one core, i.e.
// every product where OpenBLAS threads no GEMM (engine_splits_products()), and
// products under about a million multiply-adds, which OpenBLAS runs on its
// single-threaded small-matrix kernel whatever its thread count; else one
// (larger products are left to the BLAS's threads).
int product_parts(const EngineOptions& engine, int64_t multiply_adds);
// Parts for element-wise work (per-pair kernels, the optimizer): matrix_threads()
// when set, else free_cores(). element_grain(g): the least items per part,
// g by default, 1 when the thread count is set (a forced split happens even on
// the small inputs of the exactness tests).
int element_parts(const EngineOptions& engine);
int64_t element_grain(const EngineOptions& engine, int64_t grain);

// Runs body(part) for every part in [0, parts): part 0 on the calling thread,
// the others on helper threads, and returns when all are done. If the helpers
// are serving another caller (the studio's model slots run concurrently), the
// parts run one after another on the caller instead of crowding the cores. The
// first exception a part throws is rethrown here.
void run_parts(int parts, const std::function<void(int)>& body);

// body(item, next, part) for every item in [0, n), the parts claiming `chunk`
// items at a time as they come free, so that where one core is held up (another
// program, or time this shared VM's host takes from it) the others take over its
// share. `next` is the item the same part takes after this one (n: none), for
// prefetching. Only for work whose result does not depend on which part does an
// item. Part 0 runs on the calling thread, as in run_parts.
void for_each_claimed(size_t n, int parts, size_t chunk,
                      const std::function<void(size_t, size_t, int)>& body);

// body(begin, end) over [0, n) in at most `parts` contiguous chunks of at least
// `grain` items each, through run_parts.
void run_chunks(int64_t n, int64_t grain, int parts, const std::function<void(int64_t, int64_t)>& body);

}  // namespace translution
