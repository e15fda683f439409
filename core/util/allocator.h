#pragma once
// How freed memory goes back to glibc's allocator, set once at start (and
// switched by `bench --compare allocator`).
//
// glibc hands every block above its mmap threshold (dynamic, at most 32 MB) back
// to the system on free, so each training step page-faults fresh memory for every
// large temporary: 15.7 s against 10.8 s per Translution ViT-A/12 step at batch
// 32 when all freed memory is kept in the heap instead (docs/benchmarks.md). But a
// heap that keeps everything also keeps what it cannot reuse: blocks of one size
// freed between blocks still in use, 0.2-0.3 GB above the live peak in that step.
// The default keeps freed blocks in the heap below 16 MB and maps each larger one
// (the 61 MB pair-row tensors, the 25 MB offset-matrix banks) on its own, so its
// memory goes back to the system the moment it is freed and the next large block
// reuses it; small temporaries, the many, stay warm.
// TRANSLUTION_KEEP_FREED_MEMORY=0 leaves glibc's own policy; =all keeps every block
// (bench's --freed-memory and --compare freed-memory measure the two).
#include <string>

namespace translution {

enum class FreedMemory {
  KeepSmallMapLarge,  // the default
  KeepAll,            // every block from the heap, kept (the policy before session 6)
  System,             // glibc as it starts (only keep_freed_memory() leaves it so)
};

// Blocks of at least this size are mapped on their own under KeepSmallMapLarge.
constexpr int kMappedBlockBytes = 16 << 20;

void set_freed_memory(FreedMemory policy);
FreedMemory freed_memory();  // the policy last set (before any: the default)
FreedMemory parse_freed_memory(const std::string& name);  // keep-small or keep-all
const char* freed_memory_name(FreedMemory policy);

// The policy $TRANSLUTION_KEEP_FREED_MEMORY asks for (unset: the default).
void keep_freed_memory();

}  // namespace translution
