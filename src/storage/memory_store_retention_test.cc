// MemoryStore and the attributes a put gives its value (PutOptions): expiry,
// retention classes, prefix-aware eviction, and the observer.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/key_page.h"
#include "storage/memory_store.h"

namespace memkv::storage {
namespace {

constexpr uint64_t kChunk = 4096;

struct Fixture {
  ManualRealtimeClock clock;
  std::vector<StoreEvent> events;
  std::unique_ptr<MemoryStore> store;

  explicit Fixture(uint64_t chunks, double pinned_max_fraction = 0.5,
                   StoreEventSet observed = StoreEventSet::All()) {
    MemoryStoreOptions options{.max_size_bytes = chunks * kChunk, .block_size_bytes = kChunk};
    options.realtime_clock = &clock;
    options.pinned_max_fraction = pinned_max_fraction;
    options.pin_ttl_ms = 10'000;
    options.pin_ttl_max_ms = 60'000;
    options.observer = [this](const StoreEvent& e) { events.push_back(e); };
    options.observed = observed;
    auto created = MemoryStore::Create(options);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    store = std::move(created).value();
  }

  Status Put(std::string_view key, const PutOptions& options = {}, uint64_t size = kChunk, char fill = 'x') {
    std::string bytes(size, fill);
    return store->Put(key, bytes.data(), bytes.size(), options);
  }
  bool Has(std::string_view key) { return store->Exists(key); }
  uint64_t FreeChunks() const { return store->Stats().free_bytes / kChunk; }
};

PutOptions Ttl(uint64_t ms) {
  PutOptions o;
  o.ttl_ms = ms;
  return o;
}
PutOptions Pinned(uint64_t ms = 0) {
  PutOptions o;
  o.ttl_ms = ms;
  o.retention = Retention::kPinned;
  return o;
}
PutOptions EvictFirst() {
  PutOptions o;
  o.retention = Retention::kEvictFirst;
  return o;
}
PutOptions Child(std::string parent) {
  PutOptions o;
  o.parent_key = std::move(parent);
  return o;
}

TEST(MemoryStoreExpiry, AnExpiredValueIsAMissEverywhereAndItsRoomIsFreed) {
  Fixture f(4);
  ASSERT_TRUE(f.Put("a", Ttl(1000)).ok());
  ASSERT_TRUE(f.Put("b").ok());
  f.clock.Advance(999);
  EXPECT_TRUE(f.store->Get("a").ok());
  EXPECT_EQ(f.FreeChunks(), 2u);
  f.clock.Advance(1);
  KeyPage page("", "", 10);
  f.store->OfferKeys(&page);
  EXPECT_EQ(page.Take(), std::vector<std::string>{"b"});
  EXPECT_FALSE(f.store->ValueSize("a").has_value());
  EXPECT_FALSE(f.Has("a"));
  EXPECT_EQ(f.store->Get("a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.FreeChunks(), 3u);
  MemoryStoreStats stats = f.store->Stats();
  EXPECT_EQ(stats.expired, 1u);
  EXPECT_EQ(stats.keys, 1u);
  EXPECT_EQ(stats.evictions, 0u);
}

TEST(MemoryStoreExpiry, TheSweepFreesExpiredValuesSoonestFirstAndBounded) {
  Fixture f(8);
  ASSERT_TRUE(f.Put("late", Ttl(300)).ok());
  ASSERT_TRUE(f.Put("soon", Ttl(100)).ok());
  ASSERT_TRUE(f.Put("mid", Ttl(200)).ok());
  ASSERT_TRUE(f.Put("never").ok());
  EXPECT_EQ(f.store->SweepExpired(10), 0u);
  f.clock.Advance(250);
  EXPECT_EQ(f.store->SweepExpired(1), 1u);
  EXPECT_EQ(f.store->Stats().keys, 3u);
  EXPECT_EQ(f.store->SweepExpired(10), 1u);
  EXPECT_EQ(f.store->Stats().keys, 2u);
  EXPECT_EQ(f.FreeChunks(), 6u);
  f.clock.Advance(1000);
  EXPECT_EQ(f.store->SweepExpired(10), 1u);
  EXPECT_TRUE(f.Has("never"));
  EXPECT_EQ(f.store->Stats().expired, 3u);
}

TEST(MemoryStoreExpiry, ExpiredValuesGoBeforeAnyEviction) {
  Fixture f(3);
  ASSERT_TRUE(f.Put("old").ok());
  ASSERT_TRUE(f.Put("brief", Ttl(10)).ok());
  ASSERT_TRUE(f.Put("new").ok());
  f.clock.Advance(10);
  ASSERT_TRUE(f.Put("next").ok());
  EXPECT_TRUE(f.Has("old"));
  EXPECT_TRUE(f.Has("new"));
  EXPECT_EQ(f.store->Stats().evictions, 0u);
  EXPECT_EQ(f.store->Stats().expired, 1u);
}

TEST(MemoryStorePinned, APinIsNotEvictedAndEachHitReArmsItsTtl) {
  Fixture f(4);
  ASSERT_TRUE(f.Put("pin", Pinned(1000)).ok());
  for (const char* k : {"a", "b", "c", "d", "e", "f"}) ASSERT_TRUE(f.Put(k).ok());
  EXPECT_TRUE(f.Has("pin"));
  f.clock.Advance(800);
  ASSERT_TRUE(f.store->Get("pin").ok());
  f.clock.Advance(800);
  EXPECT_TRUE(f.Has("pin"));  // 1600 ms after the put, 800 after the hit
  ASSERT_TRUE(f.store->Match("pin"));
  f.clock.Advance(999);
  EXPECT_TRUE(f.Has("pin"));
  f.clock.Advance(1);
  EXPECT_FALSE(f.Has("pin"));
  EXPECT_EQ(f.store->Stats().pinned_bytes, 0u);
}

TEST(MemoryStorePinned, APinWithoutTtlGetsPinTtlAndLongOnesAreClamped) {
  Fixture f(4);
  ASSERT_TRUE(f.Put("default", Pinned()).ok());
  ASSERT_TRUE(f.Put("long", Pinned(1'000'000)).ok());
  f.clock.Advance(9'999);
  EXPECT_TRUE(f.Has("default"));
  f.clock.Advance(1);
  EXPECT_FALSE(f.Has("default"));
  f.clock.Advance(50'000);  // 60 s: pin_ttl_max
  EXPECT_FALSE(f.Has("long"));
}

TEST(MemoryStorePinned, APinPastTheCapIsRefusedNamingTheSettingAndKeepsTheOldValue) {
  Fixture f(8);  // cap: half of 32 KiB
  ASSERT_TRUE(f.Put("p1", Pinned(), 2 * kChunk).ok());
  ASSERT_TRUE(f.Put("p2", Pinned(), 2 * kChunk).ok());
  EXPECT_EQ(f.store->Stats().pinned_bytes, 4 * kChunk);
  EXPECT_EQ(f.store->Stats().pinned_cap_bytes, 4 * kChunk);
  ASSERT_TRUE(f.Put("k", {}, kChunk, 'o').ok());
  const uint64_t free_before = f.FreeChunks();
  Status refused = f.Put("k", Pinned(), kChunk, 'n');
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("memory.pinned_max_fraction"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("16 KiB"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("20 KiB"), std::string::npos) << refused.message();
  EXPECT_EQ(f.FreeChunks(), free_before);
  auto old = f.store->Get("k");
  ASSERT_TRUE(old.ok());
  std::string bytes(old->size(), '\0');
  old->CopyTo(bytes.data());
  EXPECT_EQ(bytes, std::string(kChunk, 'o'));
  EXPECT_EQ(f.store->Stats().pin_refusals, 1u);
  // Replacing a pin by one of the same size stays within the cap.
  EXPECT_TRUE(f.Put("p1", Pinned(), 2 * kChunk).ok());
  EXPECT_EQ(f.store->Stats().pinned_bytes, 4 * kChunk);
}

TEST(MemoryStoreEviction, EvictFirstValuesGoBeforeOlderNormalOnes) {
  Fixture f(3);
  ASSERT_TRUE(f.Put("normal").ok());
  ASSERT_TRUE(f.Put("first", EvictFirst()).ok());
  ASSERT_TRUE(f.Put("newer").ok());
  ASSERT_TRUE(f.store->Get("first").ok());
  ASSERT_TRUE(f.Put("more").ok());
  EXPECT_FALSE(f.Has("first"));
  EXPECT_TRUE(f.Has("normal"));
  EXPECT_TRUE(f.Has("newer"));
}

TEST(MemoryStoreEviction, AChainUnderPressureLosesItsTailFirst) {
  Fixture f(8);
  std::string parent;
  for (int i = 0; i < 8; ++i) {
    const std::string key = "c" + std::to_string(i);
    ASSERT_TRUE(f.Put(key, Child(parent)).ok());
    parent = key;
  }
  ASSERT_TRUE(f.Put("x").ok());
  EXPECT_FALSE(f.Has("c7"));
  ASSERT_TRUE(f.Put("y").ok());
  EXPECT_FALSE(f.Has("c6"));
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(f.Has("c" + std::to_string(i))) << i;
  // Plain LRU would have taken the head, the oldest value.
  EXPECT_EQ(f.store->Stats().evictions, 2u);
}

TEST(MemoryStoreEviction, AChildStoredBeforeItsParentStillKeepsIt) {
  Fixture f(3);
  ASSERT_TRUE(f.Put("c1", Child("c0")).ok());
  ASSERT_TRUE(f.Put("c0").ok());
  ASSERT_TRUE(f.Put("a").ok());
  ASSERT_TRUE(f.Put("b").ok());  // leaves: c1 (oldest), a; c0 has a child
  EXPECT_FALSE(f.Has("c1"));
  EXPECT_TRUE(f.Has("c0"));
  // c0 is a leaf now, placed by its own last use: older than a and b.
  ASSERT_TRUE(f.Put("d").ok());
  EXPECT_FALSE(f.Has("c0"));
  EXPECT_TRUE(f.Has("a"));
  EXPECT_TRUE(f.Has("b"));
}

TEST(MemoryStoreEviction, AParentCycleIsStillEvictable) {
  Fixture f(2);
  ASSERT_TRUE(f.Put("a", Child("b")).ok());
  ASSERT_TRUE(f.Put("b", Child("a")).ok());
  ASSERT_TRUE(f.Put("c").ok());
  EXPECT_FALSE(f.Has("a"));
  EXPECT_TRUE(f.Has("c"));
}

TEST(MemoryStoreEviction, PinnedValuesAreNeverEvictedSoAFullPoolOfPinsRefuses) {
  Fixture f(2, 1.0);
  ASSERT_TRUE(f.Put("p1", Pinned()).ok());
  ASSERT_TRUE(f.Put("p2", Pinned()).ok());
  Status status = f.Put("n");
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(f.Has("p1"));
  EXPECT_TRUE(f.Has("p2"));
}

// A store, a replacement, a delete, an expiry, an eviction and a checksum
// failure, in that order (two chunks of pool).
void MakeEveryKindOfChange(Fixture& f) {
  PutOptions hashed;
  hashed.block_hash = "h1";
  hashed.parent_hash = "h0";
  hashed.hash_kind = HashKind::kInt64;
  ASSERT_TRUE(f.Put("a", hashed).ok());
  ASSERT_TRUE(f.Put("a").ok());                   // replaced
  ASSERT_TRUE(f.store->Delete("a").ok());         // deleted
  ASSERT_TRUE(f.Put("t", Ttl(5)).ok());
  f.clock.Advance(5);
  EXPECT_EQ(f.store->SweepExpired(10), 1u);       // expired
  ASSERT_TRUE(f.Put("e1", EvictFirst()).ok());
  ASSERT_TRUE(f.Put("e2").ok());
  ASSERT_TRUE(f.Put("e3").ok());                  // evicts e1
  ASSERT_TRUE(f.store->CorruptForTesting("e2").ok());
  EXPECT_FALSE(f.store->Get("e2").ok());          // checksum
}

TEST(MemoryStoreObserver, HearsEveryPublishAndRemovalWithItsReasonAndAttributes) {
  Fixture f(2);
  MakeEveryKindOfChange(f);
  using K = StoreEventKind;
  using R = RemovalReason;
  std::vector<std::tuple<K, std::string, R>> got;
  for (const StoreEvent& e : f.events) got.emplace_back(e.kind, e.key, e.reason);
  std::vector<std::tuple<K, std::string, R>> want = {
      {K::kStored, "a", R::kNone},      {K::kRemoved, "a", R::kReplaced}, {K::kStored, "a", R::kNone},
      {K::kRemoved, "a", R::kDeleted},  {K::kStored, "t", R::kNone},      {K::kRemoved, "t", R::kExpired},
      {K::kStored, "e1", R::kNone},     {K::kStored, "e2", R::kNone},     {K::kRemoved, "e1", R::kEvicted},
      {K::kStored, "e3", R::kNone},     {K::kRemoved, "e2", R::kChecksum}};
  EXPECT_EQ(got, want);
  ASSERT_FALSE(f.events.empty());
  EXPECT_EQ(f.events[0].block_hash, "h1");
  EXPECT_EQ(f.events[0].parent_hash, "h0");
  EXPECT_EQ(f.events[0].hash_kind, HashKind::kInt64);
  EXPECT_EQ(f.events[0].value_size, kChunk);
  EXPECT_EQ(f.events[1].block_hash, "h1");  // the removed value's own hashes
  EXPECT_EQ(f.events[6].retention, Retention::kEvictFirst);
  for (size_t i = 0; i < f.events.size(); ++i) {
    EXPECT_EQ(f.events[i].seq, i + 1);
    EXPECT_EQ(f.events[i].medium, StoreMedium::kDram);
  }
}

TEST(MemoryStoreObserver, HearsOnlyTheEventsItTakes) {
  const StoreEventSet observed =
      StoreEventSet::None().WithRemoved(RemovalReason::kEvicted).WithRemoved(RemovalReason::kChecksum);
  Fixture f(2, 0.5, observed);
  MakeEveryKindOfChange(f);
  using K = StoreEventKind;
  using R = RemovalReason;
  std::vector<std::tuple<K, std::string, R>> got;
  for (const StoreEvent& e : f.events) got.emplace_back(e.kind, e.key, e.reason);
  std::vector<std::tuple<K, std::string, R>> want = {{K::kRemoved, "e1", R::kEvicted},
                                                     {K::kRemoved, "e2", R::kChecksum}};
  EXPECT_EQ(got, want);
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_LT(f.events[0].seq, f.events[1].seq);  // still in the store's order
  EXPECT_FALSE(observed.Wants(K::kStored, R::kNone));
  EXPECT_TRUE(StoreEventSet::All().Wants(K::kRemoved, R::kReplaced));
  EXPECT_FALSE(StoreEventSet::None().WithStored().Wants(K::kRemoved, R::kReplaced));
}

TEST(MemoryStoreOptionsCheck, RefusesAFractionOrPinTtlsOutOfRange) {
  for (double fraction : {0.0, -1.0, 1.5}) {
    MemoryStoreOptions o{.max_size_bytes = 4 * kChunk, .block_size_bytes = kChunk};
    o.pinned_max_fraction = fraction;
    auto created = MemoryStore::Create(o);
    EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(created.status().message().find("pinned_max_fraction"), std::string::npos);
  }
  MemoryStoreOptions o{.max_size_bytes = 4 * kChunk, .block_size_bytes = kChunk};
  o.pin_ttl_ms = 2000;
  o.pin_ttl_max_ms = 1000;
  EXPECT_EQ(MemoryStore::Create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memkv::storage
