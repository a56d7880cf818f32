#include "metrics/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace memkv::metrics {
namespace {

TEST(HistogramTest, ValueOnABoundCountsUnderThatBound) {
  const uint64_t bounds[] = {10, 100, 1000};
  auto h = Histogram::Create(bounds);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  for (uint64_t v : {0, 10}) h->Observe(v);      // le=10
  for (uint64_t v : {11, 100}) h->Observe(v);    // le=100
  h->Observe(1000);                              // le=1000
  for (uint64_t v : {1001u, 1u << 20}) h->Observe(v);  // +Inf only
  HistogramSnapshot s = h->Snapshot();
  EXPECT_EQ(s.bounds, std::vector<uint64_t>({10, 100, 1000}));
  EXPECT_EQ(s.cumulative, std::vector<uint64_t>({2, 4, 5}));
  EXPECT_EQ(s.count, 7u);
  EXPECT_EQ(s.sum, 0u + 10 + 11 + 100 + 1000 + 1001 + (1u << 20));
}

TEST(HistogramTest, EmptySnapshotIsZeros) {
  Histogram h = Histogram::ForLatencyNanos();
  HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.cumulative, std::vector<uint64_t>(LatencyBoundsNanos().size(), 0));
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.sum, 0u);
}

TEST(HistogramTest, LatencyBoundsSpanOneMicrosecondToTenSeconds) {
  auto bounds = LatencyBoundsNanos();
  ASSERT_TRUE(Histogram::ValidateBounds(bounds).ok());
  EXPECT_EQ(bounds.front(), 1000u);
  EXPECT_EQ(bounds.back(), 10'000'000'000u);
  auto sizes = SizeBoundsBytes();
  ASSERT_TRUE(Histogram::ValidateBounds(sizes).ok());
  EXPECT_EQ(sizes.front(), 64u);
  EXPECT_EQ(sizes.back(), 1u << 30);
}

TEST(HistogramTest, RejectsBoundsThatAreNotStrictlyAscending) {
  const uint64_t repeated[] = {1, 2, 2};
  auto h = Histogram::Create(repeated);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("index 2: 2 then 2"), std::string::npos) << h.status().message();
  EXPECT_FALSE(Histogram::Create(std::span<const uint64_t>()).ok());
  std::vector<uint64_t> too_many(kMaxBounds + 1);
  for (size_t i = 0; i < too_many.size(); ++i) too_many[i] = i + 1;
  EXPECT_FALSE(Histogram::Create(too_many).ok());
  too_many.pop_back();
  EXPECT_TRUE(Histogram::Create(too_many).ok());
}

TEST(HistogramTest, ManyBoundsSpanSeveralCacheLinesPerShard) {
  std::vector<uint64_t> bounds(kMaxBounds);
  for (size_t i = 0; i < bounds.size(); ++i) bounds[i] = (i + 1) * 10;
  auto h = Histogram::Create(bounds);
  ASSERT_TRUE(h.ok());
  for (uint64_t v = 0; v <= 700; ++v) h->Observe(v);
  HistogramSnapshot s = h->Snapshot();
  EXPECT_EQ(s.cumulative[0], 11u);   // 0..10
  EXPECT_EQ(s.cumulative[63], 641u);  // 0..640
  EXPECT_EQ(s.count, 701u);
  EXPECT_EQ(s.sum, 700u * 701 / 2);
}

TEST(HistogramTest, ConcurrentObserveFromEightThreadsSumsExactly) {
  Histogram h = Histogram::ForLatencyNanos();
  Counter c;
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 200'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, &c, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        // Thread t observes 1 µs (even i) or 2(t+1) seconds (odd i).
        h.Observe(i % 2 == 0 ? 1000 : 2 * (t + 1) * 1'000'000'000ull);
        c.Add(2);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, kThreads * kPerThread);
  EXPECT_EQ(s.cumulative[0], kThreads * kPerThread / 2);  // le=1e-06
  uint64_t odd_sum = 0;
  for (int t = 0; t < kThreads; ++t) odd_sum += 2 * (t + 1) * 1'000'000'000ull * (kPerThread / 2);
  EXPECT_EQ(s.sum, kThreads * (kPerThread / 2) * 1000 + odd_sum);
  // le=10 s holds the 1 µs half and threads 0..4 (2, 4, 6, 8 and exactly 10 s).
  EXPECT_EQ(s.cumulative.back(), kThreads * (kPerThread / 2) + 5 * (kPerThread / 2));
  EXPECT_EQ(c.Value(), 2 * kThreads * kPerThread);
}

TEST(HistogramTest, ThreadsGetDistinctShardsUpToTheShardCount) {
  std::vector<size_t> shards(kShards);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kShards; ++i) {
    threads.emplace_back([&shards, i] { shards[i] = internal::ThisThreadShard(); });
  }
  for (auto& thread : threads) thread.join();
  // Round-robin: kShards consecutive new threads cover every shard once.
  std::sort(shards.begin(), shards.end());
  for (size_t i = 0; i < kShards; ++i) EXPECT_EQ(shards[i], i);
}

TEST(CounterTest, AddsAndIsZeroAtStart) {
  Counter c;
  EXPECT_EQ(c.Value(), 0u);
  c.Add();
  c.Add(41);
  EXPECT_EQ(c.Value(), 42u);
}

}  // namespace
}  // namespace memkv::metrics
