// TieredStore and what a put says about its value (PutOptions): the options
// reach DRAM through every commit path, prefix matches across both tiers,
// pins refused before they reach the drives, and the observer hearing of
// both media (the events it takes, no others).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/clock.h"
#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

using drive::Pattern;

constexpr uint64_t kPoolBytes = 4 << 20;
constexpr size_t kValueBytes = 48 << 10;

std::vector<uint8_t> ValueOf(int i) { return Pattern(kValueBytes, 2000 + i); }

PutOptions PinnedFor(uint64_t ttl_ms) {
  PutOptions o;
  o.ttl_ms = ttl_ms;
  o.retention = Retention::kPinned;
  return o;
}

TEST(TieredStoreOptionsTest, MatchPrefixCountsLeadingKeysInEitherTierAndStopsAtAGap) {
  ManualRealtimeClock clock;
  TierHarness h(kPoolBytes, /*with_drives=*/true, {}, 8 << 20, &clock);
  TieredStore& store = h.store();
  PutOptions brief;
  brief.ttl_ms = 100;
  ASSERT_TRUE(PutNow(store, h.loop(), "k0", ValueOf(0)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "k1", ValueOf(1)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "k2", ValueOf(2), brief).ok());
  ASSERT_TRUE(store.memory().Delete("k1").ok());  // on the drives only now
  const std::vector<std::string_view> keys = {"k0", "k1", "k2", "k3"};
  EXPECT_EQ(store.MatchPrefix(keys), 3u);
  const std::vector<std::string_view> gap = {"k0", "absent", "k2"};
  EXPECT_EQ(store.MatchPrefix(gap), 1u);
  EXPECT_EQ(store.MatchPrefix(std::span<const std::string_view>()), 0u);
}

TEST(TieredStoreOptionsTest, AValueOnlyTheDrivesHoldExpiresThereAndTheSweepSaysSo) {
  ManualRealtimeClock clock;
  std::vector<storage::StoreEvent> events;
  TieredStoreOptions options;
  options.observer = [&](const storage::StoreEvent& e) { events.push_back(e); };
  TierHarness h(kPoolBytes, /*with_drives=*/true, options, 8 << 20, &clock);
  TieredStore& store = h.store();
  PutOptions brief;
  brief.ttl_ms = 100;
  brief.block_hash = "bh";
  ASSERT_TRUE(PutNow(store, h.loop(), "k0", ValueOf(0)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "k1", ValueOf(1), brief).ok());
  ASSERT_TRUE(store.memory().Delete("k1").ok());  // on the drives only now
  const std::vector<std::string_view> keys = {"k0", "k1"};
  EXPECT_EQ(store.MatchPrefix(keys), 2u);
  clock.Advance(100);
  EXPECT_EQ(store.MatchPrefix(keys), 1u);
  EXPECT_EQ(GetNow(store, h.loop(), "k1").status().code(), StatusCode::kNotFound);
  events.clear();
  EXPECT_EQ(store.SweepExpired(10), 1u);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].medium, storage::StoreMedium::kDrive);
  EXPECT_EQ(events[0].reason, storage::RemovalReason::kExpired);
  EXPECT_EQ(events[0].block_hash, "bh");
  EXPECT_EQ(events[0].value_size, kValueBytes);
}

TEST(TieredStoreOptionsTest, AValueReadBackFromTheDrivesKeepsItsOptionsInDram) {
  ManualRealtimeClock clock;
  TierHarness h(kPoolBytes, /*with_drives=*/true, {}, 8 << 20, &clock);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "pin", ValueOf(0), PinnedFor(1000)).ok());
  PutOptions brief;
  brief.ttl_ms = 1000;
  ASSERT_TRUE(PutNow(store, h.loop(), "brief", ValueOf(1), brief).ok());
  ASSERT_TRUE(store.memory().Delete("pin").ok());
  ASSERT_TRUE(store.memory().Delete("brief").ok());
  clock.Advance(600);
  ASSERT_TRUE(GetNow(store, h.loop(), "pin").ok());
  ASSERT_TRUE(GetNow(store, h.loop(), "brief").ok());
  EXPECT_EQ(store.MemoryStats().pinned_values, 1u);
  clock.Advance(400);  // the rest of brief's TTL: gone from DRAM too
  EXPECT_FALSE(store.memory().Exists("brief"));
}

TEST(TieredStoreOptionsTest, MatchPrefixReArmsAPinnedValuesTtl) {
  ManualRealtimeClock clock;
  TierHarness h(kPoolBytes, /*with_drives=*/false, {}, 8 << 20, &clock);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "pin", ValueOf(0), PinnedFor(1000)).ok());
  const std::vector<std::string_view> keys = {"pin"};
  clock.Advance(800);
  EXPECT_EQ(store.MatchPrefix(keys), 1u);
  clock.Advance(800);
  EXPECT_EQ(store.MatchPrefix(keys), 1u);
  clock.Advance(1000);
  EXPECT_EQ(store.MatchPrefix(keys), 0u);
}

TEST(TieredStoreOptionsTest, OptionsReachDramThroughCommitMany) {
  TierHarness h(kPoolBytes, /*with_drives=*/false);
  TieredStore& store = h.store();
  std::vector<PutCommit> puts;
  for (int i = 0; i < 2; ++i) {
    const std::vector<uint8_t> bytes = ValueOf(i);
    Result<storage::PendingPut> put = store.Reserve(bytes.size());
    ASSERT_TRUE(put.ok());
    CopyInto(*put, bytes);
    puts.emplace_back(std::move(put).value(), "m" + std::to_string(i), Checksum(bytes.data(), bytes.size()),
                      i == 0 ? PinnedFor(0) : PutOptions{});
  }
  std::optional<std::vector<Status>> result;
  store.CommitMany(std::move(puts), h.loop().reply(), [&](std::vector<Status> s) { result = std::move(s); });
  ASSERT_TRUE(h.loop().RunUntil([&] { return result.has_value(); }));
  ASSERT_TRUE((*result)[0].ok());
  ASSERT_TRUE((*result)[1].ok());
  EXPECT_EQ(store.MemoryStats().pinned_values, 1u);
  EXPECT_EQ(store.MemoryStats().pinned_bytes, kValueBytes);
}

TEST(TieredStoreOptionsTest, APinPastTheCapIsRefusedBeforeItReachesTheDrives) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  // The cap: half the pool, 42 values of 48 KiB.
  for (int i = 0; i < 42; ++i) {
    ASSERT_TRUE(PutNow(store, h.loop(), "p" + std::to_string(i), ValueOf(i), PinnedFor(0)).ok()) << i;
  }
  Status refused = PutNow(store, h.loop(), "over", ValueOf(99), PinnedFor(0));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("memory.pinned_max_fraction"), std::string::npos) << refused.message();
  EXPECT_FALSE(store.Exists("over"));
}

TEST(TieredStoreOptionsTest, TheObserverHearsOfBothMedia) {
  std::vector<storage::StoreEvent> events;
  TieredStoreOptions options;
  options.observer = [&](const storage::StoreEvent& e) { events.push_back(e); };
  TierHarness h(kPoolBytes, /*with_drives=*/true, options);
  TieredStore& store = h.store();
  PutOptions hashed;
  hashed.block_hash = "bh";
  hashed.parent_hash = "ph";
  ASSERT_TRUE(PutNow(store, h.loop(), "a", ValueOf(0), hashed).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "a", ValueOf(1), hashed).ok());
  ASSERT_TRUE(DeleteNow(store, h.loop(), "a").ok());
  using K = storage::StoreEventKind;
  using R = storage::RemovalReason;
  using M = storage::StoreMedium;
  std::vector<std::tuple<M, K, R>> got;
  for (const storage::StoreEvent& e : events) got.emplace_back(e.medium, e.kind, e.reason);
  const std::vector<std::tuple<M, K, R>> want = {
      {M::kDrive, K::kStored, R::kNone},      {M::kDram, K::kStored, R::kNone},
      {M::kDrive, K::kRemoved, R::kReplaced}, {M::kDrive, K::kStored, R::kNone},
      {M::kDram, K::kRemoved, R::kReplaced},  {M::kDram, K::kStored, R::kNone},
      {M::kDrive, K::kRemoved, R::kDeleted},  {M::kDram, K::kRemoved, R::kDeleted}};
  EXPECT_EQ(got, want);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].block_hash, "bh");
  EXPECT_EQ(events[0].parent_hash, "ph");
  EXPECT_EQ(events[0].value_size, kValueBytes);
}

TEST(TieredStoreOptionsTest, TheObserverHearsOnlyTheEventsItTakesFromBothMedia) {
  std::vector<storage::StoreEvent> events;
  TieredStoreOptions options;
  options.observer = [&](const storage::StoreEvent& e) { events.push_back(e); };
  options.observed = storage::StoreEventSet::None().WithRemoved(storage::RemovalReason::kDeleted);
  TierHarness h(kPoolBytes, /*with_drives=*/true, options);
  TieredStore& store = h.store();
  ASSERT_TRUE(PutNow(store, h.loop(), "a", ValueOf(0)).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "a", ValueOf(1)).ok());  // replaced: not taken
  ASSERT_TRUE(DeleteNow(store, h.loop(), "a").ok());
  using K = storage::StoreEventKind;
  using R = storage::RemovalReason;
  using M = storage::StoreMedium;
  std::vector<std::tuple<M, K, R, uint64_t>> got;
  for (const storage::StoreEvent& e : events) got.emplace_back(e.medium, e.kind, e.reason, e.value_size);
  const std::vector<std::tuple<M, K, R, uint64_t>> want = {{M::kDrive, K::kRemoved, R::kDeleted, kValueBytes},
                                                           {M::kDram, K::kRemoved, R::kDeleted, kValueBytes}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace memkv::tier
