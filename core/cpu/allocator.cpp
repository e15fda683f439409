#include "cpu/allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cpu/large_block_pool.h"
#include "util/error.h"

namespace translution {
namespace {

std::atomic<FreedMemory> g_policy{FreedMemory::System};
std::atomic<bool> g_pool_on{false};

// Address space for the pool: the machine's memory, or a quarter of an address-
// space limit (ulimit -v) if that is less; nothing is committed until used.
size_t pool_capacity() {
  size_t capacity = size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    capacity = std::min(capacity, size_t(limit.rlim_cur / 4));
  return capacity;
}

// Never destroyed: tensors may be freed during static destruction.
LargeBlockPool& pool() {
  static LargeBlockPool* instance = new LargeBlockPool(pool_capacity());
  return *instance;
}

void release(void* p) {
  if (pool().owns(p))
    pool().release(p);
  else
    c10::free_cpu(p);
}

// LibTorch's CPU allocator: large blocks from the pool while it is on, the rest
// (and whatever the pool cannot fit) as LibTorch's own allocator would.
// LibTorch 2.3 made allocate() non-const and added a pure copy_data(): both
// forms of allocate() are defined, whichever the base declares is overridden,
// and copy_data() is defined either way (hence no `override` here).
class PoolingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const {
    void* p = nullptr;
    if (g_pool_on && bytes >= kLargeBlockBytes) p = pool().allocate(bytes);
    if (!p && bytes > 0) p = c10::alloc_cpu(bytes);  // throws LibTorch's out-of-memory error
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DataPtr allocate(size_t bytes) {
    return static_cast<const PoolingCpuAllocator*>(this)->allocate(bytes);
  }
  c10::DeleterFnPtr raw_deleter() const { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
};

void install_pool() {
  static const bool installed = [] {
    // Never destroyed: LibTorch keeps using it until the process ends.
    c10::SetCPUAllocator(new PoolingCpuAllocator, /*priority=*/1);  // above LibTorch's default (0)
    return true;
  }();
  (void)installed;
}

void keep_heap_blocks() {
  mallopt(M_MMAP_MAX, 0);  // blocks glibc would map come from the heap, to be reused
  // and the heap is not trimmed after every step (nor when a step of the other
  // policy, under bench --compare, leaves its top free).
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  // Every thread allocates from that one heap. A thread's own arena is a chain of
  // heaps, and glibc unmaps a heap whenever all of it is free, whatever the trim
  // threshold: the helper thread running half of each split training step would
  // fault its memory in afresh every step, and its half would end later
  // (docs/performance.md, "Memory and `--recompute`"). The engine's threads
  // allocate a tensor at a time, not per element, so sharing the heap's lock
  // costs them little. Set before the helpers first allocate.
  mallopt(M_ARENA_MAX, 1);
}

void use_pool() {
  keep_heap_blocks();
  if (!pool().available()) {  // no address range to be had: the heap keeps everything
    g_pool_on = false;
    g_policy = FreedMemory::KeepAll;
    return;
  }
  install_pool();
  g_pool_on = true;
  g_policy = FreedMemory::Pool;
}

}  // namespace

FreedMemory freed_memory() { return g_policy; }

const char* freed_memory_name(FreedMemory policy) {
  switch (policy) {
    case FreedMemory::Pool: return "pool";
    case FreedMemory::KeepAll: return "keep-all";
    case FreedMemory::System: return "system";
  }
  return "?";
}

bool in_large_block_pool(const void* p) { return pool().owns(p); }

void release_free_memory() {
  if (pool().available()) pool().trim();
  malloc_trim(0);
}

void keep_freed_memory() {
  const char* env = std::getenv("TRANSLUTION_KEEP_FREED_MEMORY");
  const std::string value = env ? env : "";
  if (value == "0") return;  // glibc as it starts (dynamic threshold)
  use_pool();
}

}  // namespace translution
