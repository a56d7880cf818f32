// TieredStore under several threads at once, each with a loop of its own (as
// server workers have), in memory mode and with drives: on different keys
// every thread reads back what it wrote last; on one key every read is one
// whole value that some thread wrote, and DRAM never holds a value older than
// the drives.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::PollFor;

using drive::Pattern;

constexpr int kThreads = 4;

// A value that names itself: its seed in the first 8 bytes, then the pattern
// of that seed, so a torn or mixed read is told from a whole one.
std::vector<uint8_t> Tagged(uint64_t seed, size_t size) {
  std::vector<uint8_t> v = Pattern(size, seed);
  std::memcpy(v.data(), &seed, sizeof(seed));
  return v;
}

bool WholeValue(const std::vector<uint8_t>& v) {
  if (v.size() < sizeof(uint64_t)) return false;
  uint64_t seed = 0;
  std::memcpy(&seed, v.data(), sizeof(seed));
  return v == Tagged(seed, v.size());
}

// Sizes from under one extent to four, so that a value's size changes
// between overwrites.
size_t SizeFor(uint64_t seed) { return 1000 + (seed * 7919) % (200 << 10); }

class TieredStoreConcurrencyTest : public ::testing::TestWithParam<bool> {
 protected:
  // Big enough that puts in flight on every thread never run the pool dry;
  // DRAM misses come from dropping DRAM copies (what eviction does).
  TierHarness harness_{32 << 20, /*with_drives=*/GetParam(), TieredStoreOptions{.io_threads = 3}};
  TieredStore& store_ = harness_.store();
};

TEST_P(TieredStoreConcurrencyTest, ThreadsOnDifferentKeysReadBackWhatTheyWroteLast) {
  constexpr int kRounds = 40;
  constexpr int kKeysPerThread = 5;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TestLoop loop;
      std::vector<std::vector<uint8_t>> last(kKeysPerThread);
      for (int r = 0; r < kRounds; ++r) {
        const int k = r % kKeysPerThread;
        const std::string key = "t" + std::to_string(t) + "/" + std::to_string(k);
        const uint64_t seed = uint64_t(t) * 100'000 + r;
        switch (r % 4) {
          case 0:
          case 1: {
            std::vector<uint8_t> bytes = Tagged(seed, SizeFor(seed));
            if (!PutNow(store_, loop, key, bytes).ok()) ++failures;
            last[k] = std::move(bytes);
            break;
          }
          case 2:
            if (GetParam()) (void)store_.memory().Delete(key);  // evicted from DRAM
            break;
          case 3:
            if (r % 8 == 3) {
              Status s = DeleteNow(store_, loop, key);
              if (!s.ok() && s.code() != StatusCode::kNotFound) ++failures;
              last[k].clear();
            }
            break;
        }
        Result<std::vector<uint8_t>> got = GetBytes(store_, loop, key);
        const bool expected = last[k].empty() ? got.status().code() == StatusCode::kNotFound
                                              : got.ok() && *got == last[k];
        if (!expected) ++failures;
        if (store_.Exists(key) == last[k].empty()) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(TieredStoreConcurrencyTest, ThreadsOnOneKeyOnlyEverSeeWholeValuesAndTheTiersAgree) {
  constexpr int kRounds = 60;
  std::atomic<int> failures{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TestLoop loop;
      for (int r = 0; r < kRounds; ++r) {
        const uint64_t seed = uint64_t(t) * 100'000 + r;
        if ((r + t) % 3 == 0) {
          if (!PutNow(store_, loop, "shared", Tagged(seed, SizeFor(seed))).ok()) ++failures;
        } else if ((r + t) % 3 == 1 && GetParam()) {
          (void)store_.memory().Delete("shared");  // evicted from DRAM
        }
        Result<std::vector<uint8_t>> got = GetBytes(store_, loop, "shared");
        if (got.ok()) {
          ++reads;
          if (!WholeValue(*got)) ++failures;
        } else if (got.status().code() != StatusCode::kNotFound) {
          ++failures;
        }
        std::optional<uint64_t> size = store_.ValueSize("shared");
        if (size && *size < sizeof(uint64_t)) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);

  TestLoop loop;
  Result<std::vector<uint8_t>> now = GetBytes(store_, loop, "shared");
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_TRUE(WholeValue(*now));
  if (GetParam()) {
    (void)store_.memory().Delete("shared");
    Result<std::vector<uint8_t>> on_drives = GetBytes(store_, loop, "shared");
    ASSERT_TRUE(on_drives.ok()) << on_drives.status().ToString();
    EXPECT_EQ(*on_drives, *now) << "DRAM and the drives hold the same, last value";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, TieredStoreConcurrencyTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& mode) {
                           return mode.param ? std::string("Drives") : std::string("MemoryOnly");
                         });

// A put whose flush stalls holds its own key only: a put of another key
// reaches the drives meanwhile and waits in the group commit, whatever its
// hash. (With a lock per stripe of 256, as before, these two keys shared one
// and the second put waited for the first's flush before its write.)
TEST(TieredStoreKeyLocks, APutOfAnotherKeyReachesTheDrivesWhileAFlushStalls) {
  TierHarness h(4 << 20, /*with_drives=*/true, {}, 8 << 20, nullptr, drive::SyncMode::kAlways, /*faulty=*/true);
  TieredStore& store = h.store();
  ASSERT_NE(h.faults(), nullptr);
  const std::string first = "stalled";
  auto stripe = [](std::string_view k) { return std::hash<std::string_view>{}(k) % 256; };
  std::string second;
  for (int i = 0; second.empty(); ++i) {
    if (std::string k = "other-" + std::to_string(i); stripe(k) == stripe(first)) second = k;
  }
  const std::vector<uint8_t> a = Pattern(4096, 1), b = Pattern(4096, 2);
  std::optional<Status> put_a, put_b;
  auto put = [&](const std::string& key, const std::vector<uint8_t>& bytes, std::optional<Status>* result) {
    Result<storage::PendingPut> reserved = store.Reserve(bytes.size(), key);
    ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
    CopyInto(*reserved, bytes);
    EXPECT_EQ(store.Commit(std::move(reserved).value(), key, Checksum(bytes.data(), bytes.size()), h.loop().reply(),
                           [result](Status s) { *result = std::move(s); }),
              Completion::kPending);
  };

  h.faults()->HoldSyncs(true);
  put(first, a, &put_a);
  ASSERT_TRUE(PollFor([&] { return h.faults()->syncs_held() == 1; }));
  put(second, b, &put_b);
  EXPECT_TRUE(PollFor([&] { return store.DrivesStats()->puts == 2; }))
      << "the second key's value is written while the first key's flush stalls";
  EXPECT_FALSE(put_a || put_b) << "neither is answered before its flush";
  h.faults()->HoldSyncs(false);
  ASSERT_TRUE(h.loop().RunUntil([&] { return put_a && put_b; }));
  EXPECT_TRUE(put_a->ok()) << put_a->ToString();
  EXPECT_TRUE(put_b->ok()) << put_b->ToString();
  EXPECT_EQ(GetBytes(store, h.loop(), first).value(), a);
  EXPECT_EQ(GetBytes(store, h.loop(), second).value(), b);
}

}  // namespace
}  // namespace memkv::tier
