#pragma once
// How much memory a run may still take on a device, for refusing one that would
// not fit before anything is allocated (train/memory_guard.h).
#include <string>

#include <c10/core/Device.h>

namespace translution {

struct AvailableMemory {
  double bytes = -1;   // -1: not known here (nothing is refused then)
  std::string source;  // where the figure came from, for messages
};

// CPU: Linux's MemAvailable (/proc/meminfo: free memory plus what the kernel can
// reclaim without swapping). CUDA: the device's free memory (cudaMemGetInfo) plus
// what LibTorch's caching allocator holds reserved but unused, which it hands out
// again. $TRANSLUTION_AVAILABLE_MEMORY, a number of bytes, overrides both: for
// tests that need a refusal to happen (or not) whatever the machine has. Throws
// translution::Error when that variable is not a number.
AvailableMemory available_memory(const c10::Device& device);

}  // namespace translution
