#pragma once
// How much memory a run may still take on a device, for refusing one that would
// not fit before anything is allocated (train/memory_guard.h).
#include <string>

#include <c10/core/Device.h>

namespace translution {

struct AvailableMemory {
  double bytes = -1;   // -1: not known here (nothing is refused then)
  std::string source;  // where the figure came from, for messages
  // The figure bounds each process alone (ulimit -v), not the sum of a run's processes.
  bool per_process = false;
};

// CPU: the least of Linux's MemAvailable (/proc/meminfo: free memory plus what the
// kernel can reclaim without swapping), what the process's cgroups still allow (a
// container's or a systemd slice's limit, cgroup_headroom_bytes) and its address-space
// limit (ulimit -v) less the address space it holds (and, where the run `computes`, the
// work buffers OpenBLAS maps); `source` names which. CUDA: the device's free memory (cudaMemGetInfo) plus
// what LibTorch's caching allocator holds reserved but unused, which it hands out
// again. $TRANSLUTION_AVAILABLE_MEMORY, a number of bytes, overrides both: for
// tests that need a refusal to happen (or not) whatever the machine has. Throws
// translution::Error when that variable is not a number.
AvailableMemory available_memory(const c10::Device& device, bool computes = true);

// Bytes the cgroups a process belongs to still let it take: over its memory cgroup and each
// above it, the least of the limit less the usage (its inactive file cache, which the kernel
// reclaims, not counted). cgroup v2 (memory.max) and v1 (memory.limit_in_bytes). -1 where no
// level sets a limit. `root`: where the hierarchies are mounted (/sys/fs/cgroup);
// `membership`: the text of /proc/self/cgroup.
double cgroup_headroom_bytes(const std::string& root, const std::string& membership);

}  // namespace translution
