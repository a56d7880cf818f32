// KeyLocks: one holder per key, different keys never wait, batches take
// their keys all at once.
#include "tier/key_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::PollFor;

TEST(KeyLocks, DifferentKeysDoNotWaitOnEachOther) {
  KeyLocks locks;
  const KeyLocks::Held a = locks.Lock("a");
  const std::string_view others[] = {"b", "c", "b"};
  const KeyLocks::Held bc = locks.LockAll(others);  // on this thread: would hang if it waited
  EXPECT_EQ(locks.held(), 3u) << "a, b and c; b named twice is held once";
  EXPECT_EQ(locks.waiting(), 0u);
}

TEST(KeyLocks, ASecondHolderOfAKeyWaitsUntilTheFirstLetsGo) {
  KeyLocks locks;
  std::optional<KeyLocks::Held> first(locks.Lock("k"));
  std::atomic<bool> got{false};
  std::thread second([&] {
    const KeyLocks::Held held = locks.Lock("k");
    got = true;
  });
  ASSERT_TRUE(PollFor([&] { return locks.waiting() == 1; }));
  EXPECT_FALSE(got.load()) << "the key is still held";
  first.reset();
  EXPECT_TRUE(PollFor([&] { return got.load(); }));
  second.join();
  EXPECT_EQ(locks.held(), 0u);
}

TEST(KeyLocks, ABatchWaitsForAnyOfItsKeysAndHoldsNoneMeanwhile) {
  KeyLocks locks;
  std::optional<KeyLocks::Held> b(locks.Lock("b"));
  std::atomic<bool> got{false};
  std::thread batch([&] {
    const std::string_view keys[] = {"a", "b", "c"};
    const KeyLocks::Held held = locks.LockAll(keys);
    got = true;
  });
  ASSERT_TRUE(PollFor([&] { return locks.waiting() == 1; }));
  // "a" is free while the batch waits for "b": another caller takes it.
  { const KeyLocks::Held a = locks.Lock("a"); }
  EXPECT_FALSE(got.load());
  b.reset();
  EXPECT_TRUE(PollFor([&] { return got.load(); }));
  batch.join();
  EXPECT_EQ(locks.held(), 0u);
}

TEST(KeyLocks, BatchesThatOverlapInAnyOrderAllFinish) {
  KeyLocks locks;
  constexpr int kRounds = 2000;
  std::atomic<int> inside{0};
  std::atomic<bool> shared_key_held_twice{false};
  auto run = [&](std::vector<std::string_view> keys) {
    for (int i = 0; i < kRounds; ++i) {
      const KeyLocks::Held held = locks.LockAll(keys);
      if (inside.fetch_add(1) != 0) shared_key_held_twice = true;  // every batch names "x"
      inside.fetch_sub(1);
    }
  };
  std::thread t1(run, std::vector<std::string_view>{"x", "p", "q"});
  std::thread t2(run, std::vector<std::string_view>{"q", "p", "x"});
  std::thread t3(run, std::vector<std::string_view>{"x"});
  t1.join();
  t2.join();
  t3.join();
  EXPECT_FALSE(shared_key_held_twice.load());
  EXPECT_EQ(locks.held(), 0u);
  EXPECT_EQ(locks.waiting(), 0u);
}

}  // namespace
}  // namespace memkv::tier
