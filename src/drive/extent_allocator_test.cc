#include "drive/extent_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace memkv::drive {
namespace {

ExtentAllocator Fresh(uint64_t units) {
  ExtentAllocator a(units);
  a.Seal();
  return a;
}

TEST(ExtentAllocator, AFreshDriveFillsFromUnitZeroUntilFull) {
  ExtentAllocator a = Fresh(10);
  EXPECT_EQ(a.Allocate(1), 0u);
  EXPECT_EQ(a.Allocate(3), 1u);
  EXPECT_EQ(a.Allocate(6), 4u);
  EXPECT_FALSE(a.Allocate(1).has_value());
  EXPECT_EQ(a.free_units(), 0u);
  EXPECT_EQ(a.used_units(), 10u);
  EXPECT_EQ(a.free_runs(), 0u);
  EXPECT_EQ(a.longest_free_run(), 0u);
  EXPECT_FALSE(a.Allocate(0).has_value());
}

TEST(ExtentAllocator, BestFitTakesTheShortestRunThatHoldsTheExtent) {
  ExtentAllocator a = Fresh(100);
  // Used: everything; then holes of 5 at 10, 2 at 30, 3 at 50 and 40 at 60.
  ASSERT_EQ(a.Allocate(100), 0u);
  ASSERT_TRUE(a.Free(10, 5));
  ASSERT_TRUE(a.Free(30, 2));
  ASSERT_TRUE(a.Free(50, 3));
  ASSERT_TRUE(a.Free(60, 40));
  EXPECT_EQ(a.free_runs(), 4u);
  EXPECT_EQ(a.longest_free_run(), 40u);
  EXPECT_EQ(a.Allocate(3), 50u) << "the 3-unit hole, not the front of a longer one";
  EXPECT_EQ(a.Allocate(2), 30u);
  EXPECT_EQ(a.Allocate(1), 10u) << "the 5-unit hole is now the shortest";
  EXPECT_EQ(a.Allocate(1), 11u);
  EXPECT_EQ(a.Allocate(20), 60u);
  EXPECT_EQ(a.Allocate(3), 12u) << "12..14 holds 3 exactly";
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.free_units(), 20u);
}

TEST(ExtentAllocator, FreedRunsCoalesceWithBothNeighbours) {
  ExtentAllocator a = Fresh(16);
  std::vector<uint64_t> first;
  for (int i = 0; i < 4; ++i) first.push_back(*a.Allocate(4));
  ASSERT_EQ(first, (std::vector<uint64_t>{0, 4, 8, 12}));
  ASSERT_TRUE(a.Free(0, 4));
  ASSERT_TRUE(a.Free(8, 4));
  EXPECT_EQ(a.free_runs(), 2u);
  EXPECT_EQ(a.longest_free_run(), 4u);
  EXPECT_FALSE(a.Allocate(8).has_value()) << "8 units free, but in two pieces";
  ASSERT_TRUE(a.Free(4, 4));  // joins 0..3 and 8..11
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.longest_free_run(), 12u);
  ASSERT_TRUE(a.Free(12, 4));
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.longest_free_run(), 16u);
  EXPECT_EQ(a.Allocate(16), 0u) << "the whole drive in one piece again";
}

TEST(ExtentAllocator, DoubleFreesAndRunsOutOfRangeAreRefused) {
  ExtentAllocator a = Fresh(8);
  ASSERT_EQ(a.Allocate(4), 0u);
  EXPECT_TRUE(a.Free(0, 2));
  EXPECT_FALSE(a.Free(0, 2)) << "twice";
  EXPECT_FALSE(a.Free(1, 2)) << "overlaps a free run";
  EXPECT_FALSE(a.Free(6, 1)) << "never allocated";
  EXPECT_FALSE(a.Free(7, 2)) << "past the end";
  EXPECT_FALSE(a.Free(2, 0)) << "empty";
  EXPECT_TRUE(a.IsUsed(2, 2));
  EXPECT_FALSE(a.IsUsed(0));
  EXPECT_TRUE(a.IsUsed(1, 2)) << "part of it is used";
  EXPECT_EQ(a.used_units(), 2u);
}

TEST(ExtentAllocator, AllocateLongestCutsWhenNoRunHoldsTheWholeExtent) {
  ExtentAllocator a = Fresh(12);
  ASSERT_EQ(a.Allocate(12), 0u);
  ASSERT_TRUE(a.Free(1, 2));
  ASSERT_TRUE(a.Free(5, 3));
  EXPECT_FALSE(a.Allocate(4).has_value());
  auto run = a.AllocateLongest(4);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(*run, (UnitRun{.first = 5, .units = 3}));
  run = a.AllocateLongest(1);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(*run, (UnitRun{.first = 1, .units = 1})) << "no longer than asked";
  EXPECT_EQ(a.AllocateLongest(9)->units, 1u);
  EXPECT_FALSE(a.AllocateLongest(1).has_value()) << "nothing free";
}

TEST(ExtentAllocator, RebuiltAtOpenFromClaimedRunsNeverHandsThemOut) {
  ExtentAllocator a(100);
  EXPECT_TRUE(a.MarkUsed(0, 1));
  EXPECT_TRUE(a.MarkUsed(3, 4));   // 3..6
  EXPECT_TRUE(a.MarkUsed(50, 10));
  EXPECT_TRUE(a.MarkUsed(99, 1));
  EXPECT_FALSE(a.MarkUsed(6, 2)) << "unit 6 is claimed already";
  EXPECT_FALSE(a.MarkUsed(45, 6)) << "reaches into 50..59";
  EXPECT_TRUE(a.MarkUsed(2, 1));
  EXPECT_FALSE(a.MarkUsed(2, 1)) << "a unit claimed twice";
  EXPECT_FALSE(a.MarkUsed(100, 1)) << "out of range";
  EXPECT_FALSE(a.MarkUsed(98, 3)) << "runs past the end";
  EXPECT_FALSE(a.Allocate(1).has_value()) << "nothing is handed out before Seal";
  // A record dropped after it claimed part of its extents gives them back.
  EXPECT_TRUE(a.MarkUsed(20, 5));
  EXPECT_TRUE(a.Unmark(20, 5));
  EXPECT_FALSE(a.Unmark(20, 5));
  a.Seal();
  EXPECT_EQ(a.used_units(), 1u + 1 + 4 + 10 + 1);
  EXPECT_EQ(a.free_runs(), 3u) << "1, 7..49 and 60..98";
  EXPECT_EQ(a.longest_free_run(), 43u);
  std::vector<bool> used(100, false);
  for (uint64_t u : {0, 2, 3, 4, 5, 6, 99}) used[u] = true;
  for (uint64_t u = 50; u < 60; ++u) used[u] = true;
  while (auto u = a.Allocate(1)) {
    ASSERT_FALSE(used[*u]) << "unit " << *u << " handed out while claimed, or twice";
    used[*u] = true;
  }
  EXPECT_EQ(a.free_units(), 0u);
}

// Random allocations and frees against a model of every unit: nothing is
// handed out twice, the counts agree, and freeing everything coalesces the
// drive back into one run.
TEST(ExtentAllocator, ARandomWorkloadKeepsEveryUnitAccountedFor) {
  constexpr uint64_t kUnits = 5000;
  ExtentAllocator a = Fresh(kUnits);
  std::vector<int> owner(kUnits, -1);
  std::map<int, std::pair<uint64_t, uint64_t>> live;  // id -> (first, units)
  std::mt19937_64 rng(11);
  int next_id = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 5 < 3) {
      const uint64_t want = rng() % 4 == 0 ? 1 + rng() % 64 : 1 + rng() % 3;
      std::optional<uint64_t> first = a.Allocate(want);
      if (!first) {
        EXPECT_LT(a.longest_free_run(), want);
        continue;
      }
      for (uint64_t u = *first; u < *first + want; ++u) {
        ASSERT_EQ(owner[u], -1) << "unit " << u << " handed out twice at step " << step;
        owner[u] = next_id;
      }
      live[next_id++] = {*first, want};
    } else {
      auto it = std::next(live.begin(), long(rng() % live.size()));
      ASSERT_TRUE(a.Free(it->second.first, it->second.second));
      for (uint64_t u = it->second.first; u < it->second.first + it->second.second; ++u) owner[u] = -1;
      live.erase(it);
    }
    if (step % 1000 == 0) {
      uint64_t used = 0;
      for (int o : owner) used += o >= 0;
      ASSERT_EQ(a.used_units(), used);
      ASSERT_LE(a.free_runs(), live.size() + 1);
    }
  }
  for (auto& [id, run] : live) ASSERT_TRUE(a.Free(run.first, run.second));
  EXPECT_EQ(a.free_units(), kUnits);
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.longest_free_run(), kUnits);
}

}  // namespace
}  // namespace memkv::drive
