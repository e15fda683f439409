// The freed-memory policies do what they promise: under keep-small a large
// block's memory leaves the process when the tensor is freed and a small one's
// stays for reuse; under keep-all both stay. Measured on the resident set.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "util/allocator.h"
#include "util/device.h"
#include "util/error.h"

using namespace translution;

namespace {

// Resident growth left behind by a touched-then-freed tensor of `bytes`.
int64_t resident_left_by(int64_t bytes) {
  const int64_t before = resident_memory_bytes();
  {
    at::Tensor t = at::empty({bytes / 4}, at::kFloat);
    t.fill_(1.0f);  // touch every page
  }
  return resident_memory_bytes() - before;
}

class FreedMemoryTest : public ::testing::Test {
 protected:
  void TearDown() override { set_freed_memory(FreedMemory::KeepSmallMapLarge); }
};

constexpr int64_t kLarge = int64_t(4) * kMappedBlockBytes;  // 64 MB

TEST_F(FreedMemoryTest, KeepSmallHandsLargeBlocksBackOnFree) {
  ASSERT_GE(resident_memory_bytes(), 0) << "no resident-set figure on this system";
  set_freed_memory(FreedMemory::KeepSmallMapLarge);
  EXPECT_EQ(freed_memory(), FreedMemory::KeepSmallMapLarge);
  EXPECT_LT(resident_left_by(kLarge), kLarge / 4);
}

TEST_F(FreedMemoryTest, KeepAllKeepsLargeBlocksResident) {
  ASSERT_GE(resident_memory_bytes(), 0) << "no resident-set figure on this system";
  set_freed_memory(FreedMemory::KeepAll);
  EXPECT_EQ(freed_memory(), FreedMemory::KeepAll);
  EXPECT_GT(resident_left_by(kLarge), kLarge * 3 / 4);
}

TEST_F(FreedMemoryTest, NamesRoundTripAndUnknownOnesAreRejected) {
  for (const FreedMemory p : {FreedMemory::KeepSmallMapLarge, FreedMemory::KeepAll})
    EXPECT_EQ(parse_freed_memory(freed_memory_name(p)), p);
  try {
    parse_freed_memory("keep-some");
    FAIL() << "an unknown policy was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keep-some"), std::string::npos) << e.what();
  }
  EXPECT_THROW(set_freed_memory(FreedMemory::System), Error);
  EXPECT_EQ(freed_memory(), FreedMemory::KeepSmallMapLarge) << "a rejected policy must not be recorded";
}

}  // namespace
