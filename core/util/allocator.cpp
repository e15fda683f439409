#include "util/allocator.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>

#include "util/error.h"

namespace translution {
namespace {
std::atomic<FreedMemory> g_policy{FreedMemory::KeepSmallMapLarge};
}  // namespace

FreedMemory freed_memory() { return g_policy; }

void set_freed_memory(FreedMemory policy) {
  // mallopt takes effect for later allocations; blocks already handed out keep
  // where they came from and are freed correctly under any policy.
  switch (policy) {
    case FreedMemory::KeepSmallMapLarge:
      mallopt(M_MMAP_MAX, 1 << 16);  // glibc's default count of mapped blocks
      mallopt(M_MMAP_THRESHOLD, kMappedBlockBytes);
      mallopt(M_TRIM_THRESHOLD, 1 << 30);  // the heap is not trimmed after every step
      break;
    case FreedMemory::KeepAll:
      mallopt(M_MMAP_MAX, 0);
      mallopt(M_TRIM_THRESHOLD, 1 << 30);
      break;
    case FreedMemory::System:  // its threshold is dynamic: mallopt can pin it, not give it back
      throw Error("glibc's own freed-memory policy can only be kept from the start (TRANSLUTION_KEEP_FREED_MEMORY=0)");
  }
  g_policy = policy;
}

FreedMemory parse_freed_memory(const std::string& name) {
  if (name == "keep-small") return FreedMemory::KeepSmallMapLarge;
  if (name == "keep-all") return FreedMemory::KeepAll;
  throw Error("unknown freed-memory policy '" + name + "' (expected keep-small or keep-all)");
}

const char* freed_memory_name(FreedMemory policy) {
  switch (policy) {
    case FreedMemory::KeepSmallMapLarge: return "keep-small";
    case FreedMemory::KeepAll: return "keep-all";
    case FreedMemory::System: return "system";
  }
  return "?";
}

void keep_freed_memory() {
  const char* env = std::getenv("TRANSLUTION_KEEP_FREED_MEMORY");
  const std::string value = env ? env : "";
  if (value == "0") {
    g_policy = FreedMemory::System;
    return;
  }
  set_freed_memory(value == "all" ? FreedMemory::KeepAll : FreedMemory::KeepSmallMapLarge);
}

}  // namespace translution
