#include "storage/pool_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <vector>

#include "base/allocation_count.h"

namespace memkv::storage {
namespace {

uint64_t Total(std::span<const PoolRun> runs) {
  uint64_t sum = 0;
  for (const PoolRun& r : runs) sum += r.length;
  return sum;
}

TEST(PoolAllocator, FreshPoolFillsFromTheFrontSideBySide) {
  PoolAllocator a(100);
  PoolRuns runs;
  ASSERT_TRUE(a.Allocate(10, 4, &runs));
  ASSERT_TRUE(a.Allocate(20, 4, &runs));
  EXPECT_EQ(runs, (PoolRuns{{0, 10}, {10, 20}}));
  EXPECT_EQ(a.free_units(), 70u);
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.largest_free_run(), 70u);
}

TEST(PoolAllocator, ZeroUnitsTakesNothing) {
  PoolAllocator a(8);
  PoolRuns runs;
  EXPECT_TRUE(a.Allocate(0, 1, &runs));
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(a.free_units(), 8u);
}

TEST(PoolAllocator, BestFitTakesTheShortestRunThatHolds) {
  PoolAllocator a(100);
  PoolRuns runs;
  ASSERT_TRUE(a.Allocate(100, 1, &runs));
  // Free holes of 30 at 0, 5 at 40, 10 at 60.
  a.Free(std::vector<PoolRun>{{0, 30}, {40, 5}, {60, 10}});
  EXPECT_EQ(a.free_runs(), 3u);
  PoolRuns got;
  ASSERT_TRUE(a.Allocate(8, 1, &got));
  EXPECT_EQ(got, (PoolRuns{{60, 8}}));
  got.clear();
  ASSERT_TRUE(a.Allocate(5, 1, &got));
  EXPECT_EQ(got, (PoolRuns{{40, 5}}));
}

TEST(PoolAllocator, FreedNeighboursMergeIntoOneRun) {
  PoolAllocator a(30);
  PoolRuns x, y, z;
  ASSERT_TRUE(a.Allocate(10, 1, &x));
  ASSERT_TRUE(a.Allocate(10, 1, &y));
  ASSERT_TRUE(a.Allocate(10, 1, &z));
  a.Free(x);
  a.Free(z);
  EXPECT_EQ(a.free_runs(), 2u);
  a.Free(y);  // joins both sides
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.largest_free_run(), 30u);
  PoolRuns all;
  ASSERT_TRUE(a.Allocate(30, 1, &all));
  EXPECT_EQ(all, (PoolRuns{{0, 30}}));
}

TEST(PoolAllocator, SplitsAcrossTheLongestRunsInPoolOrderWhenNoneHoldsIt) {
  PoolAllocator a(100);
  PoolRuns runs;
  ASSERT_TRUE(a.Allocate(100, 1, &runs));
  a.Free(std::vector<PoolRun>{{0, 2}, {10, 20}, {50, 15}, {80, 3}});
  PoolRuns got;
  ASSERT_TRUE(a.Allocate(30, 2, &got));
  EXPECT_EQ(got, (PoolRuns{{10, 20}, {50, 10}}));
  EXPECT_EQ(a.free_units(), 10u);
}

TEST(PoolAllocator, RefusesWhenThePiecesWouldBeTooMany) {
  PoolAllocator a(100);
  PoolRuns runs;
  ASSERT_TRUE(a.Allocate(100, 1, &runs));
  a.Free(std::vector<PoolRun>{{0, 10}, {20, 10}, {40, 10}});
  PoolRuns got;
  EXPECT_FALSE(a.CanAllocate(25, 2));
  EXPECT_FALSE(a.Allocate(25, 2, &got));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(a.free_units(), 30u);  // nothing changed
  EXPECT_FALSE(a.Allocate(31, 10, &got));
  EXPECT_TRUE(a.Allocate(25, 3, &got));
  EXPECT_EQ(Total(got), 25u);
}

// The request path's case: a value cut from the front of a free run, and
// the room of the value it replaced freed beside a free run, reuse the
// runs' nodes; only a run with no free neighbour takes new ones.
TEST(PoolAllocator, CuttingARunAndFreeingBesideOneAllocateNothing) {
  PoolAllocator a(100);
  PoolRuns x, y, z;
  EXPECT_EQ(AllocationsOf([&] { EXPECT_TRUE(a.Allocate(10, 1, &x)); }), 0u);
  EXPECT_EQ(AllocationsOf([&] { EXPECT_TRUE(a.Allocate(10, 1, &y)); }), 0u);
  EXPECT_EQ(AllocationsOf([&] { EXPECT_TRUE(a.Allocate(10, 1, &z)); }), 0u);
  EXPECT_EQ(AllocationsOf([&] { a.Free(z); }), 0u);  // joins the free rest
  EXPECT_GT(AllocationsOf([&] { a.Free(x); }), 0u);  // alone: a new run
  EXPECT_EQ(a.free_runs(), 2u);
  EXPECT_EQ(AllocationsOf([&] { a.Free(y); }), 0u);  // joins both sides
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.largest_free_run(), 100u);
  EXPECT_EQ(a.free_units(), 100u);
}

// A value that takes a whole free run leaves the run's nodes for the next
// run freed with no free neighbour (puts and frees interleaved).
TEST(PoolAllocator, AWholeRunTakenLendsItsNodesToTheNextLoneRun) {
  PoolAllocator a(30);
  PoolRuns x, y, z, w;
  ASSERT_TRUE(a.Allocate(10, 1, &x));
  ASSERT_TRUE(a.Allocate(10, 1, &y));
  EXPECT_EQ(AllocationsOf([&] { EXPECT_TRUE(a.Allocate(10, 1, &z)); }), 0u);  // the last run, whole
  EXPECT_EQ(a.free_runs(), 0u);
  EXPECT_EQ(AllocationsOf([&] { a.Free(x); }), 0u);  // alone, in the nodes z's run left
  EXPECT_GT(AllocationsOf([&] { a.Free(z); }), 0u);  // alone, and nothing left to reuse
  EXPECT_EQ(a.free_runs(), 2u);
  ASSERT_TRUE(a.Allocate(10, 1, &w));
  EXPECT_EQ(AllocationsOf([&] { a.Free(w); }), 0u);
  a.Free(y);
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.largest_free_run(), 30u);
  EXPECT_EQ(a.free_units(), 30u);
}

// Random allocations and frees against a reference bitmap: no unit is ever
// handed out twice, every free unit is found again, and once everything is
// returned the pool is one run.
TEST(PoolAllocator, RandomChurnNeverOverlapsAndCoalescesBackToOneRun) {
  constexpr uint64_t kUnits = 4096;
  PoolAllocator a(kUnits);
  std::vector<bool> used(kUnits, false);
  std::vector<PoolRuns> live;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 20000; ++step) {
    if (!live.empty() && (rng() % 2 == 0 || a.free_units() < 64)) {
      size_t i = rng() % live.size();
      for (const PoolRun& r : live[i]) {
        for (uint64_t u = r.offset; u < r.offset + r.length; ++u) used[u] = false;
      }
      a.Free(live[i]);
      live[i] = std::move(live.back());
      live.pop_back();
    } else {
      uint64_t want = 1 + rng() % 64;
      PoolRuns got;
      if (!a.Allocate(want, 8, &got)) continue;
      ASSERT_EQ(Total(got), want);
      for (const PoolRun& r : got) {
        for (uint64_t u = r.offset; u < r.offset + r.length; ++u) {
          ASSERT_FALSE(used[u]) << "unit " << u << " handed out twice";
          used[u] = true;
        }
      }
      live.push_back(std::move(got));
    }
    ASSERT_EQ(a.free_units(), static_cast<uint64_t>(std::count(used.begin(), used.end(), false)));
  }
  for (const auto& runs : live) a.Free(runs);
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.largest_free_run(), kUnits);
}

}  // namespace
}  // namespace memkv::storage
