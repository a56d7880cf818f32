#include "drive/extent_allocator.h"

#include <gtest/gtest.h>

#include <set>

namespace memkv {
namespace {

TEST(ExtentAllocator, FreshDriveAllocatesLowestFirstUntilFull) {
  ExtentAllocator a(5);
  a.Seal();
  for (uint64_t want = 0; want < 5; ++want) {
    auto s = a.Allocate();
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(*s, want);
  }
  EXPECT_FALSE(a.Allocate().has_value());
  EXPECT_EQ(a.free_count(), 0u);
  EXPECT_EQ(a.used_count(), 5u);
}

TEST(ExtentAllocator, RebuiltFromUsedSlotsNeverHandsThemOut) {
  ExtentAllocator a(100);
  std::set<uint64_t> used = {0, 3, 50, 99};
  for (uint64_t s : used) EXPECT_TRUE(a.MarkUsed(s));
  EXPECT_FALSE(a.MarkUsed(3)) << "a slot claimed twice";
  EXPECT_FALSE(a.MarkUsed(100)) << "out of range";
  a.Seal();
  EXPECT_EQ(a.free_count(), 96u);
  std::set<uint64_t> handed;
  while (auto s = a.Allocate()) {
    EXPECT_EQ(used.count(*s), 0u) << *s;
    EXPECT_TRUE(handed.insert(*s).second) << "slot " << *s << " twice";
  }
  EXPECT_EQ(handed.size(), 96u);
}

TEST(ExtentAllocator, FreedSlotsComeBackAndDoubleFreeIsRefused) {
  ExtentAllocator a(3);
  a.Seal();
  auto x = a.Allocate();
  auto y = a.Allocate();
  ASSERT_TRUE(x && y);
  EXPECT_TRUE(a.Free(*x));
  EXPECT_FALSE(a.Free(*x));
  EXPECT_FALSE(a.Free(2)) << "never allocated";
  EXPECT_EQ(a.Allocate(), x);
  EXPECT_TRUE(a.IsUsed(*x));
  EXPECT_EQ(a.used_count(), 2u);
}

}  // namespace
}  // namespace memkv
