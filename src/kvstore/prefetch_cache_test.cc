#include "kvstore/prefetch_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace memkv::kvstore {
namespace {

MallocBuffer Bytes(size_t n, uint8_t fill) {
  MallocBuffer b = MallocBuffer::Allocate(n);
  std::memset(b.data(), fill, n);
  return b;
}

TEST(PrefetchCacheTest, TakeHandsTheBufferOverOnce) {
  PrefetchCache cache(1000, 10);
  MallocBuffer b = Bytes(100, 7);
  const uint8_t* block = b.data();
  ASSERT_TRUE(cache.Insert("k", std::move(b)));
  EXPECT_TRUE(cache.Contains("k"));
  std::optional<MallocBuffer> got = cache.Take("k");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->data(), block);  // the same malloc block: no copy
  EXPECT_EQ(got->size(), 100u);
  EXPECT_FALSE(cache.Take("k").has_value());
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.entries(), 0u);
}

TEST(PrefetchCacheTest, ByteBoundEvictsOldestFirst) {
  PrefetchCache cache(300, 10);
  ASSERT_TRUE(cache.Insert("a", Bytes(100, 1)));
  ASSERT_TRUE(cache.Insert("b", Bytes(100, 2)));
  ASSERT_TRUE(cache.Insert("c", Bytes(100, 3)));
  ASSERT_TRUE(cache.Insert("d", Bytes(150, 4)));  // a and b go
  EXPECT_FALSE(cache.Contains("a"));
  EXPECT_FALSE(cache.Contains("b"));
  EXPECT_TRUE(cache.Contains("c"));
  EXPECT_TRUE(cache.Contains("d"));
  EXPECT_EQ(cache.bytes(), 250u);
  EXPECT_FALSE(cache.Insert("huge", Bytes(301, 5)));  // over the bound: not kept, nothing evicted
  EXPECT_EQ(cache.entries(), 2u);
}

TEST(PrefetchCacheTest, EntryBoundAndDuplicates) {
  PrefetchCache cache(1 << 20, 2);
  ASSERT_TRUE(cache.Insert("a", Bytes(1, 1)));
  ASSERT_TRUE(cache.Insert("b", Bytes(1, 2)));
  EXPECT_FALSE(cache.Insert("b", Bytes(1, 9)));  // the first entry stays
  ASSERT_TRUE(cache.Insert("c", Bytes(1, 3)));
  EXPECT_FALSE(cache.Contains("a"));
  EXPECT_EQ(cache.Take("b")->data()[0], 2);
  EXPECT_EQ(cache.entries(), 1u);
}

TEST(PrefetchCacheTest, ZeroByteValuesHaveABlock) {
  PrefetchCache cache(10, 10);
  ASSERT_TRUE(cache.Insert("empty", MallocBuffer::Allocate(0)));
  std::optional<MallocBuffer> got = cache.Take("empty");
  ASSERT_TRUE(got.has_value());
  EXPECT_NE(got->data(), nullptr);
  EXPECT_EQ(got->size(), 0u);
}

TEST(PrefetchCacheTest, ThreadsInsertAndTake) {
  PrefetchCache cache(1 << 20, kMaxPrefetchEntries);
  std::vector<std::thread> threads;
  std::atomic<int> taken{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const std::string key = std::to_string(t) + "/" + std::to_string(i);
        cache.Insert(key, Bytes(64, static_cast<uint8_t>(i)));
        std::optional<MallocBuffer> b = cache.Take(key);
        if (b.has_value() && b->data()[63] == static_cast<uint8_t>(i)) ++taken;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(taken.load(), 2000);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(MallocBufferTest, ShrinkKeepsTheBytesAndReleaseHandsTheBlockOver) {
  MallocBuffer b = Bytes(1 << 20, 9);
  b.Shrink(10);
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(b.data()[9], 9);
  uint8_t* raw = b.Release();
  EXPECT_EQ(b.data(), nullptr);
  std::free(raw);  // what an ABI caller does
}

}  // namespace
}  // namespace memkv::kvstore
