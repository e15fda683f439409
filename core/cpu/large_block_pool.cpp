#include "cpu/large_block_pool.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <sys/mman.h>
#include <unistd.h>

namespace translution {
namespace {

size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }
size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

LargeBlockPool::LargeBlockPool(size_t capacity) {
  capacity = round_up(capacity, page_size());
  // Address space only (PROT_NONE is not charged to the commit limit, even under
  // strict overcommit); it is opened for use as the top grows (open_to).
  void* p = mmap(nullptr, capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  base_ = static_cast<char*>(p);
  capacity_ = capacity;
}

bool LargeBlockPool::open_to(size_t end) {
  if (end <= open_) return true;
  const size_t target = std::min(capacity_, round_up(end, kOpenStep));
  if (mprotect(base_ + open_, target - open_, PROT_READ | PROT_WRITE) != 0) return false;  // commit refused
  // Huge pages where the system allows them on request: a fault per 2 MB on first
  // touch, and fewer TLB misses streaming the offset matrices.
  madvise(base_ + open_, target - open_, MADV_HUGEPAGE);
  open_ = target;
  return true;
}

LargeBlockPool::~LargeBlockPool() {
  if (base_) munmap(base_, capacity_);
}

void* LargeBlockPool::allocate(size_t bytes) {
  if (!base_ || bytes == 0 || bytes > capacity_) return nullptr;  // (also keeps the rounding from wrapping)
  const size_t size = round_up(bytes, page_size());
  std::lock_guard<std::mutex> lock(mutex_);
  // Best fit among the free extents, the lowest on ties; a free extent that ends
  // at the top may also grow into untouched space.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
  size_t offset;
  if (best != free_.end()) {
    offset = best->first;
    const size_t rest = best->second - size;
    free_.erase(best);
    if (rest) free_.emplace(offset + size, rest);
  } else {
    auto last = free_.empty() ? free_.end() : std::prev(free_.end());
    const bool grow_last = last != free_.end() && last->first + last->second == top_;
    offset = grow_last ? last->first : top_;
    if (offset + size > capacity_ || !open_to(offset + size)) return nullptr;
    if (grow_last) free_.erase(last);
    top_ = offset + size;
  }
  blocks_.emplace(offset, size);
  in_use_ += size;
  return base_ + offset;
}

void LargeBlockPool::release(void* block) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t offset = size_t(static_cast<char*>(block) - base_);
  const auto it = blocks_.find(offset);
  if (it == blocks_.end()) {  // a deleter cannot throw; this would be memory corruption
    std::fprintf(stderr,
                 "internal error: a block released to the large-block pool that it did not hand out\n");
    std::abort();
  }
  size_t start = offset, size = it->second;
  in_use_ -= size;
  blocks_.erase(it);
  // Merge with the free neighbours on both sides.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
}

size_t LargeBlockPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t given = 0;
  for (const auto& [offset, size] : free_)
    if (madvise(base_ + offset, size, MADV_DONTNEED) == 0) given += size;
  return given;
}

size_t LargeBlockPool::high_water() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return top_;
}

size_t LargeBlockPool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

}  // namespace translution
