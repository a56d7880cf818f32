// TenantQuotas: usage rows per tenant, the tenant's own coldest values
// chosen (never another's, never the key's), nothing chosen when the room
// cannot be made, refusals naming the quota, and SetTenants recounting in
// LRU order while counters follow a tenant's name.
#include "storage/policy/quota/tenant_quotas.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/policy/test_entry.h"

namespace memkv::storage::policy {
namespace {

using testing::MakeEntry;
using testing::TestEntry;

std::shared_ptr<const TenantMap> Tenants(uint64_t a_quota, const std::string& a_name = "team-a") {
  return std::make_shared<TenantMap>(std::vector<TenantLimits>{
      {.name = a_name, .prefix = "a/", .dram_quota_bytes = a_quota, .drive_quota_bytes = a_quota},
      {.name = "team-b", .prefix = "b/", .dram_quota_bytes = 0, .drive_quota_bytes = 0},
  });
}

constexpr PassMask kPasses[] = {Pass({VictimClass::kExpired, VictimClass::kEvictFirst}), Pass({VictimClass::kNormal})};

struct Fixture {
  explicit Fixture(QuotaKind kind = QuotaKind::kDram) : quotas(kind) {}
  TestEntry& Link(std::string key, uint64_t bytes, Retention r = Retention::kNormal) {
    entries.push_back(MakeEntry(std::move(key), bytes, r));
    order.OnLink(*entries.back());
    quotas.OnLink(*entries.back());
    return *entries.back();
  }
  std::vector<std::string> Choose(std::string_view key, uint64_t size, Status* status) {
    std::vector<PolicyEntry*> victims;
    const uint32_t t = quotas.TenantOf(key);
    *status = quotas.ChooseRoom(t, key, size, 0, 0, 0, kPasses, nullptr, &victims);
    std::vector<std::string> keys;
    for (PolicyEntry* e : victims) keys.emplace_back(e->stored_key);
    return keys;
  }
  EvictionOrder order{false};
  TenantQuotas quotas;
  std::vector<std::unique_ptr<TestEntry>> entries;
};

TEST(TenantQuotasTest, UsageCountsEachTenantsValuesAndNothingOfTheAdministrators) {
  Fixture f;
  f.quotas.SetTenants(Tenants(100), f.order.lru());
  f.Link("a/1", 10);
  f.Link("a/2", 20);
  TestEntry& b = f.Link("b/1", 5);
  f.Link("admin", 1000);
  std::vector<TenantUsage> rows = f.quotas.Usages();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].dram_bytes, 30u);
  EXPECT_EQ(rows[0].dram_keys, 2u);
  EXPECT_EQ(rows[0].drive_bytes, 0u);
  EXPECT_EQ(rows[1].dram_bytes, 5u);
  f.quotas.OnUnlink(b, Removal::kEvicted);
  rows = f.quotas.Usages();
  EXPECT_EQ(rows[1].dram_bytes, 0u);
  EXPECT_EQ(rows[1].evictions, 1u);
}

TEST(TenantQuotasTest, ThePutsTenantLosesItsOwnColdestValuesOnlyAndNeverTheKeysOwn) {
  Fixture f;
  f.quotas.SetTenants(Tenants(30), f.order.lru());
  f.Link("a/replaced", 10);
  f.Link("b/other", 10);
  f.Link("a/cold", 10);
  f.Link("a/first", 10, Retention::kEvictFirst);
  Status s;
  EXPECT_EQ(f.Choose("a/replaced", 15, &s), (std::vector<std::string>{"a/first", "a/cold"}));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(TenantQuotasTest, WhatCannotBeFreedRefusesNamingTheQuotaWithNothingChosen) {
  Fixture f;
  f.quotas.SetTenants(Tenants(20), f.order.lru());
  f.Link("a/pinned", 10, Retention::kPinned);
  TestEntry& read = f.Link("a/read", 10);
  read.pins = 1;
  Status s;
  EXPECT_TRUE(f.Choose("a/new", 10, &s).empty());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("tenant team-a is at its DRAM quota (tenants[].dram_quota 20 B, 20 B used; a put of "
                             "10 B needs 10 B freed and what is left is pinned or being read)"),
            std::string::npos)
      << s.message();
  Status big;
  f.Choose("a/huge", 21, &big);
  EXPECT_NE(big.message().find("tenant team-a: a value of 21 B is larger than its DRAM quota (tenants[].dram_quota"),
            std::string::npos)
      << big.message();
}

TEST(TenantQuotasTest, WithoutPassesItOnlyChecksAndSaysToEvictFirst) {
  Fixture f;
  f.quotas.SetTenants(Tenants(10), f.order.lru());
  f.Link("a/cold", 10);
  std::vector<PolicyEntry*> victims;
  Status s = f.quotas.ChooseRoom(0, "a/new", 5, 0, 0, 0, {}, nullptr, &victims);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(victims.empty());
  EXPECT_NE(s.message().find("needs 5 B freed; evict its values first"), std::string::npos) << s.message();
  EXPECT_TRUE(f.quotas.ChooseRoom(0, "a/cold", 10, 10, 0, 0, {}, nullptr, &victims).ok())
      << "a replace counts the old value as freed";
}

TEST(TenantQuotasTest, TheDriveKindCountsDriveFieldsAndNamesTheDriveQuota) {
  Fixture f(QuotaKind::kDrive);
  f.quotas.SetTenants(Tenants(10), f.order.lru());
  f.Link("a/pinned", 10, Retention::kPinned);
  EXPECT_EQ(f.quotas.Usages()[0].drive_bytes, 10u);
  EXPECT_EQ(f.quotas.Usages()[0].dram_bytes, 0u);
  Status s;
  f.Choose("a/new", 5, &s);
  EXPECT_NE(s.message().find("tenant team-a is at its drive quota (tenants[].drive_quota"), std::string::npos)
      << s.message();
}

TEST(TenantQuotasTest, SetTenantsRecountsInLruOrderAndCountersFollowTheName) {
  Fixture f;
  f.quotas.SetTenants(Tenants(100), f.order.lru());
  TestEntry& old = f.Link("a/old", 10);
  f.Link("a/new", 10);
  f.order.OnTouch(old, 0);
  f.quotas.OnTouch(old, 0);
  f.quotas.CountRefusal(0);
  f.quotas.CountEviction(0, /*for_quota=*/true);
  // A reload that renames nothing: counters stay, the list is rebuilt from the LRU.
  f.quotas.SetTenants(Tenants(15), f.order.lru());
  EXPECT_EQ(f.quotas.Usages()[0].quota_refusals, 1u);
  EXPECT_EQ(f.quotas.Usages()[0].quota_evictions, 1u);
  EXPECT_EQ(f.quotas.Usages()[0].dram_bytes, 20u);
  Status s;
  EXPECT_EQ(f.Choose("a/x", 5, &s), (std::vector<std::string>{"a/new"})) << "a/old was used last";
  // Renamed: a new tenant, its counters start at 0.
  f.quotas.SetTenants(Tenants(15, "team-c"), f.order.lru());
  EXPECT_EQ(f.quotas.Usages()[0].quota_refusals, 0u);
  EXPECT_EQ(f.quotas.Usages()[0].dram_keys, 2u);
  f.quotas.SetTenants(nullptr, f.order.lru());
  EXPECT_FALSE(f.quotas.active());
  EXPECT_TRUE(f.quotas.Usages().empty());
}

}  // namespace
}  // namespace memkv::storage::policy
