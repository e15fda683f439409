// The large-block pool places, reuses and merges blocks as promised, and the
// freed-memory policies route LibTorch's CPU tensors: under pool a large tensor
// comes from the pool and its memory, freed, serves the next large tensors of
// any size without growing the resident set; small tensors and keep-all stay in
// glibc's heap.
#include "cpu/allocator.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/large_block_pool.h"
#include "util/device.h"
#include "util/error.h"

using namespace translution;

namespace {

constexpr size_t kMB = size_t(1) << 20;

TEST(LargeBlockPool, ReusesFreedSpaceBestFitAndMergesNeighbours) {
  LargeBlockPool pool(256 * kMB);
  char* a = static_cast<char*>(pool.allocate(60 * kMB));
  char* b = static_cast<char*>(pool.allocate(24 * kMB));
  char* c = static_cast<char*>(pool.allocate(60 * kMB));
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(pool.owns(a) && pool.owns(c + 60 * kMB - 1));
  EXPECT_EQ(pool.high_water(), 144 * kMB);
  pool.release(a);
  pool.release(c);
  // Two 25 MB blocks fit where a 60 MB one was; the best fit is the hole at the
  // bottom, not the free space at the top.
  char* d = static_cast<char*>(pool.allocate(25 * kMB));
  char* e = static_cast<char*>(pool.allocate(25 * kMB));
  EXPECT_EQ(d, a);
  EXPECT_EQ(e, a + 25 * kMB);
  EXPECT_EQ(pool.high_water(), 144 * kMB) << "reused space must not raise the high water";
  // A block larger than any hole grows the free extent at the top in place.
  char* f = static_cast<char*>(pool.allocate(100 * kMB));
  EXPECT_EQ(f, c);
  EXPECT_EQ(pool.high_water(), 184 * kMB);
  // Freed neighbours merge: with everything freed, one block spans the whole used range.
  for (char* p : {b, d, e, f}) pool.release(p);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
  EXPECT_EQ(pool.allocate(184 * kMB), a);
  EXPECT_EQ(pool.allocate(100 * kMB), nullptr) << "beyond the reserved range nothing is handed out";
}

TEST(LargeBlockPool, RoundsToPagesAndRefusesZero) {
  LargeBlockPool pool(8 * kMB);
  char* a = static_cast<char*>(pool.allocate(1));
  char* b = static_cast<char*>(pool.allocate(1));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  EXPECT_GE(b - a, 4096);
  EXPECT_EQ(pool.allocate(0), nullptr);
  EXPECT_EQ(pool.allocate(SIZE_MAX - 100), nullptr) << "a size that would wrap when rounded to pages";
}

// The pool installed as the CLI and the studio install it at start.
class FreedMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    keep_freed_memory();
    if (freed_memory() != FreedMemory::Pool) GTEST_SKIP() << "no address range for the pool on this system";
  }
};

TEST_F(FreedMemoryTest, PoolServesLargeTensorsAndReusesTheirMemoryAcrossSizes) {
  if (resident_memory_bytes() < 0) GTEST_SKIP() << "no resident-set figure on this system";
  const void* first = nullptr;
  {
    at::Tensor rows = at::empty({int64_t(64 * kMB / 4)}, at::kFloat);
    rows.fill_(1.0f);  // touch every page
    first = rows.data_ptr();
    EXPECT_TRUE(in_large_block_pool(first));
  }
  const int64_t before = resident_memory_bytes();
  at::Tensor g1 = at::empty({int64_t(30 * kMB / 4)}, at::kFloat),
             g2 = at::empty({int64_t(30 * kMB / 4)}, at::kFloat);
  g1.fill_(2.0f);
  g2.fill_(3.0f);
  EXPECT_TRUE(in_large_block_pool(g1.data_ptr()) && in_large_block_pool(g2.data_ptr()));
  EXPECT_LT(resident_memory_bytes() - before, int64_t(8 * kMB)) << "the freed 64 MB were not reused";
  const at::Tensor small = at::ones({1024}, at::kFloat);
  EXPECT_FALSE(in_large_block_pool(small.data_ptr())) << "small tensors belong to the heap";
  EXPECT_EQ(g1.sum().item<float>(), 2.0f * float(30 * kMB / 4));
}

TEST_F(FreedMemoryTest, ReleasingFreeMemoryShrinksTheResidentSet) {
  if (resident_memory_bytes() < 0) GTEST_SKIP() << "no resident-set figure on this system";
  {
    at::Tensor t = at::empty({int64_t(96 * kMB / 4)}, at::kFloat);
    t.fill_(1.0f);
    ASSERT_TRUE(in_large_block_pool(t.data_ptr()));
  }
  const int64_t kept = resident_memory_bytes();
  release_free_memory();
  EXPECT_GT(kept - resident_memory_bytes(), int64_t(64 * kMB)) << "the freed 96 MB stayed resident";
  at::Tensor again = at::ones({int64_t(96 * kMB / 4)}, at::kFloat);  // the range is still usable
  EXPECT_TRUE(in_large_block_pool(again.data_ptr()));
  EXPECT_EQ(again.sum().item<double>(), double(96 * kMB / 4));
}

TEST_F(FreedMemoryTest, NamesThePolicyInForce) {
  EXPECT_STREQ(freed_memory_name(freed_memory()), "pool");
  EXPECT_STREQ(freed_memory_name(FreedMemory::KeepAll), "keep-all");
  const at::Tensor t = at::zeros({int64_t(32 * kMB / 4)}, at::kFloat);
  EXPECT_TRUE(in_large_block_pool(t.data_ptr()));
}

}  // namespace
