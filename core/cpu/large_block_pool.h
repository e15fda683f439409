#pragma once
// Where the CPU tensors of 1 MiB and more live (cpu/allocator.h installs it).
//
// A training step allocates the same large blocks every time: Translution's
// pair rows (61 MB each, 18 at the end of forward) and, in backward, the offset-
// matrix gradients (25 MB each) while the rows are freed. glibc's heap keeps
// freed blocks resident but places them among small ones, leaving memory it
// cannot reuse at the peak; handing them back to the system instead costs a page
// fault per 4 KB on every step (docs/performance.md, "Memory and `--recompute`").
// This pool keeps them apart from small blocks, in one reserved address range,
// placed best-fit below the highest address ever used and never handed back:
// freed memory stays resident and warm, and the next blocks of any size reuse
// it (two gradients fit where one row was), so the resident set follows the
// live peak. Pages are touched only when first used, and trim() gives free ones
// back (the studio does when a training run ends).
#include <cstddef>
#include <map>
#include <mutex>

namespace translution {

class LargeBlockPool {
 public:
  // Reserves `capacity` bytes of address space (no memory until touched). A
  // failed reservation leaves an empty pool whose allocate() returns nullptr, as
  // does a block that does not fit or whose memory the system refuses to commit.
  explicit LargeBlockPool(size_t capacity);
  ~LargeBlockPool();
  LargeBlockPool(const LargeBlockPool&) = delete;
  LargeBlockPool& operator=(const LargeBlockPool&) = delete;

  // A page-aligned block of at least `bytes`, or nullptr when none fits.
  void* allocate(size_t bytes);
  // Returns a block from allocate() to the pool (merging it with free neighbours).
  void release(void* block);
  // Hands the memory of every free extent back to the system (the range stays
  // reserved; reuse faults fresh pages in). Returns the bytes given back.
  size_t trim();
  bool owns(const void* p) const { return base_ && p >= base_ && p < base_ + capacity_; }
  bool available() const { return base_ != nullptr; }

  // Bytes from the start of the range to the end of the highest block ever
  // placed: what the pool can have made resident.
  size_t high_water() const;
  size_t bytes_in_use() const;

 private:
  static constexpr size_t kOpenStep = size_t(64) << 20;  // the range opens for use in these steps
  bool open_to(size_t end);  // makes [0, end) usable; false when the system refuses

  char* base_ = nullptr;
  size_t capacity_ = 0;
  size_t open_ = 0;  // [0, open_) is readable and writable
  mutable std::mutex mutex_;
  size_t top_ = 0;  // first offset never handed out
  size_t in_use_ = 0;
  std::map<size_t, size_t> free_;    // offset -> size, below top_, never adjacent
  std::map<size_t, size_t> blocks_;  // offset -> size of each block handed out
};

}  // namespace translution
