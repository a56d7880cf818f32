// Policies: one call reaches every policy. A linked value is in the LRU, the
// expiry index, the pin tallies and its tenant's row; a reader pin takes it
// out of what eviction may free; unlinking takes it out of all of them.
#include "storage/policy/policies.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/allocation_count.h"
#include "storage/policy/test_entry.h"

namespace memkv::storage::policy {
namespace {

using testing::MakeEntry;

// Every policy on, the eviction order prefix-aware; 100 units of 1 byte.
PolicyOptions PrefixAwareOptions() {
  return PolicyOptions{
      .prefix_aware = true,
      .find_linked = [](std::string_view) -> PolicyEntry* { return nullptr; },
      .retention = {},
      .capacity_units = 100,
      .unit_bytes = 1,
      .quota = QuotaKind::kDram,
  };
}

TEST(PoliciesTest, OneCallReachesEveryPolicy) {
  PolicyOptions options;
  options.capacity_units = 100;
  Policies p(options);
  TenantLimits t;
  t.name = "t";
  t.prefix = "t/";
  p.quota().SetTenants(std::make_shared<TenantMap>(std::vector<TenantLimits>{t}), p.eviction().lru());
  auto normal = MakeEntry("t/n", 10);
  normal->expires_at_ms = 100;
  auto pin = MakeEntry("t/p", 5, Retention::kPinned);
  pin->ttl_ms = 1000;
  p.OnLink(*normal);
  p.OnLink(*pin);
  EXPECT_EQ(p.ttl().NextDue(100), normal.get());
  EXPECT_EQ(p.retention().retained_units(), 5u);
  EXPECT_EQ(p.quota().Usages()[0].dram_bytes, 15u);
  EXPECT_EQ(p.EvictableCost(), 10u) << "the pin is not evictable";

  p.PinReader(*normal, /*linked=*/true);
  EXPECT_EQ(p.EvictableCost(), 0u) << "a reader holds the normal value";
  EXPECT_TRUE(p.UnpinReader(*normal, true)) << "the last reader";
  EXPECT_EQ(p.EvictableCost(), 10u);

  p.OnTouch(*pin, 500);
  EXPECT_EQ(pin->expires_at_ms, 1500) << "a hit re-arms the pin";

  p.OnUnlink(*normal, Removal::kEvicted);
  p.OnUnlink(*pin, Removal::kOther);
  EXPECT_TRUE(p.ttl().empty());
  EXPECT_TRUE(p.eviction().lru().empty());
  EXPECT_EQ(p.retention().retained_units(), 0u);
  EXPECT_EQ(p.quota().Usages()[0].dram_bytes, 0u);
  EXPECT_EQ(p.quota().Usages()[0].evictions, 1u);
}

TEST(PoliciesTest, AHitAndAReaderPinAllocateNothingInAnyPolicy) {
  Policies p(PrefixAwareOptions());
  TenantLimits t;
  t.name = "t";
  t.prefix = "t/";
  p.quota().SetTenants(std::make_shared<TenantMap>(std::vector<TenantLimits>{t}), p.eviction().lru());
  std::vector<std::unique_ptr<testing::TestEntry>> entries;
  entries.push_back(MakeEntry("t/leaf", 1));
  entries.push_back(MakeEntry("t/first", 1, Retention::kEvictFirst));
  entries.push_back(MakeEntry("t/pin", 1, Retention::kPinned));
  entries.back()->ttl_ms = 1000;
  entries.back()->expires_at_ms = 1000;
  for (auto& e : entries) p.OnLink(*e);
  const uint64_t allocations = AllocationsOf([&] {
    for (int i = 0; i < 100; ++i) {
      for (auto& e : entries) {
        p.PinReader(*e, true);
        p.OnTouch(*e, i);
        p.UnpinReader(*e, true);
      }
    }
  });
  EXPECT_EQ(allocations, 0u) << "the LRU lists are intrusive and the sets re-keyed in place";
  for (auto& e : entries) p.OnUnlink(*e, Removal::kOther);
}

// A put that replaces a value unlinks the old entry and links the new one:
// the new one takes the node the old one left in the eviction order's
// queues (a leaf, an evict_first value), so the order allocates nothing.
TEST(PoliciesTest, AValueReplacingAnotherTakesItsQueueNode) {
  Policies p(PrefixAwareOptions());
  std::vector<std::unique_ptr<testing::TestEntry>> old_entries, new_entries;
  for (Retention r : {Retention::kNormal, Retention::kEvictFirst}) {
    const std::string n = std::to_string(old_entries.size());
    old_entries.push_back(MakeEntry("old/" + n, 1, r));
    new_entries.push_back(MakeEntry("new/" + n, 1, r));
  }
  for (auto& e : old_entries) p.OnLink(*e);
  for (size_t i = 0; i < old_entries.size(); ++i) {
    EXPECT_EQ(AllocationsOf([&] {
                p.OnUnlink(*old_entries[i], Removal::kOther);
                p.OnLink(*new_entries[i]);
              }),
              0u)
        << i;
  }
  // Both are queued as before: the evict_first value goes first, then the leaf.
  std::vector<PolicyEntry*> victims;
  while (p.eviction().EvictInOrder([&](PolicyEntry& e) {
    victims.push_back(&e);
    p.OnUnlink(e, Removal::kEvicted);
    return true;
  })) {
  }
  EXPECT_EQ(victims, (std::vector<PolicyEntry*>{new_entries[1].get(), new_entries[0].get()}));
}

}  // namespace
}  // namespace memkv::storage::policy
