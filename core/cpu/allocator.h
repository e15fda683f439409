#pragma once
// Where freed memory goes, set once at start (keep_freed_memory()).
//
// glibc hands every block above its mmap threshold (dynamic, at most 32 MB) back
// to the system on free, so each training step page-faults fresh memory for every
// large temporary. Kept in glibc's heap alone, large blocks sit among small ones
// and leave memory the heap cannot reuse at the peak. Both costs are measured in
// docs/performance.md, "Memory and `--recompute`" and "Paths that were measured
// and removed". So small blocks stay in the heap and LibTorch's CPU
// tensors of 1 MiB and more come from a LargeBlockPool (cpu/large_block_pool.h):
// resident and warm like the heap, but reused across sizes, so the resident set
// follows the live peak. TRANSLUTION_KEEP_FREED_MEMORY=0 leaves glibc's own policy.
#include <string>

namespace translution {

enum class FreedMemory {
  Pool,     // the default: small blocks kept in the heap, large ones in the pool
  KeepAll,  // every block from glibc's heap, kept (where no address range can be had for the pool)
  System,   // glibc as it starts (only keep_freed_memory() leaves it so)
};

// Tensors of at least this size come from the pool under FreedMemory::Pool. Low
// enough that a small model's pair rows and the slots of LibTorch's-ops products
// (a few MB each, in sizes that alternate) are pooled too: in glibc's heap a freed
// block serves only smaller ones, so alternating sizes leave holes at the peak
// (docs/performance.md, "Memory and `--recompute`").
constexpr size_t kLargeBlockBytes = size_t(1) << 20;

// The policy in force (before keep_freed_memory(): glibc as it started).
FreedMemory freed_memory();
const char* freed_memory_name(FreedMemory policy);

// Gives the memory of freed blocks back to the system: the pool's free extents
// and the top of glibc's heap. For long-lived processes between bursts of work
// (the studio, when a training run ends); the next burst faults it back in.
void release_free_memory();

// Whether p lies in a block of the large-block pool (tests).
bool in_large_block_pool(const void* p);

// Installs the pool, unless $TRANSLUTION_KEEP_FREED_MEMORY is 0. Pool falls back to
// KeepAll (and freed_memory() says so) where no address range can be reserved.
void keep_freed_memory();

}  // namespace translution
