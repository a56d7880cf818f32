// EvictionOrder: the prefix-aware order (evict_first, then leaves, a chain's
// tail before its head, then the last resort), readers and retention pins
// never taken, touching moving a value back, and the drives' passes.
#include "storage/policy/eviction/eviction_order.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "storage/policy/test_entry.h"

namespace memkv::storage::policy {
namespace {

using testing::MakeEntry;
using testing::TestEntry;

// A tiny tier: an index by key over the order.
class Tier {
 public:
  explicit Tier(bool prefix_aware)
      : order_(prefix_aware, [this](std::string_view key) -> PolicyEntry* {
          auto it = index_.find(std::string(key));
          return it != index_.end() ? it->second.get() : nullptr;
        }) {}
  TestEntry& Link(std::string key, uint64_t bytes, Retention r = Retention::kNormal, std::string parent = "") {
    auto e = MakeEntry(key, bytes, r, std::move(parent));
    TestEntry& ref = *e;
    index_[key] = std::move(e);
    order_.OnLink(ref);
    return ref;
  }
  void Unlink(std::string_view key) {
    auto it = index_.find(std::string(key));
    order_.OnUnlink(*it->second, Removal::kEvicted);
    index_.erase(it);
  }
  // Evicts in order until `n` values went; their keys.
  std::vector<std::string> Evict(size_t n) {
    std::vector<std::string> gone;
    order_.EvictInOrder([&](PolicyEntry& e) {
      gone.emplace_back(e.stored_key);
      Unlink(e.stored_key);
      return gone.size() >= n;
    });
    return gone;
  }
  EvictionOrder& order() { return order_; }

 private:
  std::map<std::string, std::unique_ptr<TestEntry>> index_;
  EvictionOrder order_;
};

TEST(EvictionOrderTest, EvictFirstGoesFirstThenLeavesLeastRecentlyUsedFirst) {
  Tier tier(/*prefix_aware=*/true);
  tier.Link("old", 1);
  tier.Link("first", 1, Retention::kEvictFirst);
  tier.Link("new", 1);
  EXPECT_EQ(tier.Evict(3), (std::vector<std::string>{"first", "old", "new"}));
}

TEST(EvictionOrderTest, APrefixChainLosesItsTailBeforeItsHeadWhateverTheUseOrder) {
  Tier tier(true);
  tier.Link("head", 1);
  tier.Link("mid", 1, Retention::kNormal, "head");
  tier.Link("tail", 1, Retention::kNormal, "mid");
  tier.Link("other", 1);
  // Each parent becomes a leaf when its child goes, placed by its own last
  // use: older than "other", so the chain goes whole before it.
  EXPECT_EQ(tier.Evict(4), (std::vector<std::string>{"tail", "mid", "head", "other"}));
}

TEST(EvictionOrderTest, AChildArrivingBeforeItsParentStillKeepsIt) {
  Tier tier(true);
  tier.Link("child", 1, Retention::kNormal, "parent");
  tier.Link("parent", 1);
  EXPECT_TRUE(tier.order().HasChildren("parent"));
  EXPECT_EQ(tier.Evict(2), (std::vector<std::string>{"child", "parent"}));
}

TEST(EvictionOrderTest, TouchingALeafMovesItBehindTheOthers) {
  Tier tier(true);
  TestEntry& a = tier.Link("a", 1);
  tier.Link("b", 1);
  tier.order().OnTouch(a, 0);
  EXPECT_EQ(tier.Evict(2), (std::vector<std::string>{"b", "a"}));
}

// A parent that becomes a leaf again joins by its own last use, among
// leaves older and newer than it; a hit moves it behind them all, and a
// leaf held by readers is passed over without losing the order after it.
TEST(EvictionOrderTest, ALeafAgainTakesItsPlaceByItsOwnLastUse) {
  Tier tier(true);
  tier.Link("old", 1);
  tier.Link("p1", 1);
  TestEntry& p2 = tier.Link("p2", 1);
  tier.Link("c1", 1, Retention::kNormal, "p1");
  tier.Link("c2", 1, Retention::kNormal, "p2");
  TestEntry& mid = tier.Link("mid", 1);
  tier.Link("new", 1);
  tier.Unlink("c2");
  tier.Unlink("c1");  // p1, then p2 again leaves, each older than "mid"
  tier.order().OnTouch(p2, 0);
  ++mid.pins;
  EXPECT_EQ(tier.Evict(4), (std::vector<std::string>{"old", "p1", "new", "p2"}));
  --mid.pins;
  EXPECT_EQ(tier.Evict(1), (std::vector<std::string>{"mid"}));
}

TEST(EvictionOrderTest, ReadersRetentionPinsAndEmptyValuesAreNeverTaken) {
  Tier tier(true);
  TestEntry& read = tier.Link("read", 4);
  read.pins = 1;
  tier.order().OnReaders(read, true);
  tier.Link("pinned", 4, Retention::kPinned);
  tier.Link("empty", 0);
  tier.Link("free", 4);
  EXPECT_EQ(tier.order().linked_cost(), 12u);
  EXPECT_EQ(tier.order().reader_held_cost(), 4u);
  EXPECT_EQ(tier.Evict(10), (std::vector<std::string>{"free"}));
}

TEST(EvictionOrderTest, AParentCycleFallsBackToPlainLruAsTheLastResort) {
  Tier tier(true);
  tier.Link("a", 1, Retention::kNormal, "b");
  tier.Link("b", 1, Retention::kNormal, "a");
  EXPECT_EQ(tier.Evict(2), (std::vector<std::string>{"a", "b"})) << "neither is a leaf: LRU decides";
}

TEST(EvictionOrderTest, WithoutPrefixAwarenessOnlyTheLruListIsKept) {
  Tier tier(/*prefix_aware=*/false);
  tier.Link("head", 1);
  tier.Link("tail", 1, Retention::kNormal, "head");
  EXPECT_FALSE(tier.order().HasChildren("head"));
  EXPECT_EQ(tier.Evict(2), (std::vector<std::string>{"head", "tail"}));
}

TEST(EvictionOrderTest, ThePassesTakeExpiredThenEvictFirstThenNormalThenTheSpared) {
  Tier tier(false);
  TestEntry& expired = tier.Link("expired-pin", 1, Retention::kPinned);
  expired.expires_at_ms = 50;
  tier.Link("spared", 1);
  tier.Link("normal", 1);
  tier.Link("first", 1, Retention::kEvictFirst);
  TestEntry& live_pin = tier.Link("live-pin", 1, Retention::kPinned);
  live_pin.expires_at_ms = 500;
  const SpareFn spare = [](std::string_view key) { return key == "spared"; };
  std::vector<std::string> order;
  ScanByPass(tier.order().lru(), kColdestPasses, /*now_ms=*/100, &spare, [&](PolicyEntry& e, VictimClass) {
    order.emplace_back(e.stored_key);
    return true;
  });
  EXPECT_EQ(order, (std::vector<std::string>{"expired-pin", "first", "normal", "spared"}));
  std::vector<std::string> two;
  ScanByPass(tier.order().lru(), kColdestPasses, 100, &spare, [&](PolicyEntry& e, VictimClass) {
    two.emplace_back(e.stored_key);
    return two.size() < 2;
  });
  EXPECT_EQ(two, (std::vector<std::string>{"expired-pin", "first"})) << "take stops the scan";
}

TEST(EvictionOrderTest, ClassifyKeepsWhatReadersHoldEvenWhenExpired) {
  auto e = MakeEntry("k", 1, Retention::kEvictFirst);
  EXPECT_EQ(Classify(*e, 0, nullptr), VictimClass::kEvictFirst);
  e->expires_at_ms = 10;
  EXPECT_EQ(Classify(*e, 10, nullptr), VictimClass::kExpired);
  e->pins = 1;
  EXPECT_EQ(Classify(*e, 10, nullptr), VictimClass::kKept);
}

}  // namespace
}  // namespace memkv::storage::policy
