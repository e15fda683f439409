#pragma once
// Where freed memory goes, set once at start (and switched by `bench --compare
// freed-memory`).
//
// glibc hands every block above its mmap threshold (dynamic, at most 32 MB) back
// to the system on free, so each training step page-faults fresh memory for every
// large temporary: 15.7 s against 10.8 s per Translution ViT-A/12 step at batch 32
// when freed memory is kept instead (docs/benchmarks.md). Kept in glibc's heap
// (keep-all), large blocks sit among small ones and leave memory the heap cannot
// reuse at the peak (Translution training: 3.10 GB resident against 2.91 GB with
// the pool; docs/benchmarks.md, "Session 6"). The default (pool) keeps small blocks
// in the heap and serves LibTorch's CPU tensors of 16 MB and more from a
// LargeBlockPool (util/large_block_pool.h): resident and warm like the heap, but
// reused across sizes, so the resident set follows the live peak.
// TRANSLUTION_KEEP_FREED_MEMORY=0 leaves glibc's own policy; =all keeps everything
// in the heap.
#include <string>

namespace translution {

enum class FreedMemory {
  Pool,     // the default: small blocks kept in the heap, large ones in the pool
  KeepAll,  // every block from glibc's heap, kept (the policy before session 6)
  System,   // glibc as it starts (only keep_freed_memory() leaves it so)
};

// Tensors of at least this size come from the pool under FreedMemory::Pool.
constexpr size_t kLargeBlockBytes = size_t(16) << 20;

// Pool falls back to KeepAll (and freed_memory() says so) where no address range
// can be reserved for the pool.
void set_freed_memory(FreedMemory policy);
FreedMemory freed_memory();  // the policy last set (before any: glibc as it started)
FreedMemory parse_freed_memory(const std::string& name);  // pool or keep-all
const char* freed_memory_name(FreedMemory policy);

// Gives the memory of freed blocks back to the system: the pool's free extents
// and the top of glibc's heap. For long-lived processes between bursts of work
// (the studio, when a training run ends); the next burst faults it back in.
void release_free_memory();

// Whether p lies in a block of the large-block pool (tests).
bool in_large_block_pool(const void* p);

// The policy $TRANSLUTION_KEEP_FREED_MEMORY asks for (unset: pool).
void keep_freed_memory();

}  // namespace translution
