// TieredStore and tenant quotas (docs/storage.md, "Tenant quotas"): a
// tenant's DRAM and drive quotas are met from its own values, never from
// another tenant's or the administrator's; what cannot be met is refused
// naming the quota; promotion stays within the DRAM quota without failing
// a get; TenantUsages adds up both tiers.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "base/tenant_map.h"
#include "drive/test_util.h"
#include "tier/tier_test_util.h"

namespace memkv::tier {
namespace {

constexpr uint64_t kPoolBytes = 4 << 20;
constexpr uint64_t kValue = 32 << 10;

std::vector<uint8_t> ValueOf(const std::string& key, uint32_t version = 0) {
  return drive::Pattern(kValue, std::hash<std::string>{}(key) + version);
}

std::shared_ptr<const TenantMap> Tenants(uint64_t a_dram, uint64_t a_drive, uint64_t b_dram = 0,
                                         uint64_t b_drive = 0) {
  return std::make_shared<const TenantMap>(std::vector<TenantLimits>{
      {.name = "team-a", .prefix = "a/", .dram_quota_bytes = a_dram, .drive_quota_bytes = a_drive},
      {.name = "team-b", .prefix = "b/", .dram_quota_bytes = b_dram, .drive_quota_bytes = b_drive},
  });
}

TEST(TieredStoreTenantTest, ATenantWritingTenTimesItsQuotasTouchesNoOtherValueInEitherTier) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  store.SetTenants(Tenants(8 * kValue, 16 * kValue));
  // The pool holds 128 values: with b's 60, the administrator's 60 and a's
  // 8 it is full, so a's puts find no free room once a is at its quota.
  std::map<std::string, uint32_t> others;
  for (int i = 0; i < 60; ++i) others["b/" + std::to_string(i)] = 0;
  for (int i = 0; i < 60; ++i) others["admin/" + std::to_string(i)] = 0;
  for (const auto& [key, version] : others) ASSERT_TRUE(PutNow(store, h.loop(), key, ValueOf(key)).ok()) << key;
  const uint64_t dram_keys_before = store.MemoryStats().keys;

  for (int i = 0; i < 160; ++i) {
    const std::string key = "a/" + std::to_string(i);
    Status s = PutNow(store, h.loop(), key, ValueOf(key));
    ASSERT_TRUE(s.ok()) << key << ": " << s.ToString();
    const TenantUsage a = store.TenantUsages().at(0);
    ASSERT_LE(a.dram_bytes, 8 * kValue) << key;
    ASSERT_LE(a.drive_bytes, 16 * kValue) << key;
  }
  const std::vector<TenantUsage> usage = store.TenantUsages();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].dram_keys, 8u);
  EXPECT_EQ(usage[0].drive_keys, 16u);
  EXPECT_EQ(usage[0].drive_bytes, 16 * kValue);
  EXPECT_EQ(usage[0].quota_evictions, (160u - 8u) + (160u - 16u)) << "DRAM and drive evictions, summed";
  EXPECT_EQ(usage[0].quota_refusals, 0u);
  EXPECT_EQ(usage[1].dram_keys, 60u);
  EXPECT_EQ(usage[1].drive_keys, 60u);
  EXPECT_EQ(usage[1].evictions, 0u);
  EXPECT_EQ(store.MemoryStats().keys, dram_keys_before + 8u);

  // Every byte of the others' values, in DRAM and (reopened alone) on the drives.
  for (const auto& [key, version] : others) {
    Result<storage::ReadHandle> in_dram = store.memory().Get(key);
    ASSERT_TRUE(in_dram.ok()) << key << " left DRAM";
    std::vector<uint8_t> got(in_dram->size());
    in_dram->CopyTo(got.data());
    EXPECT_EQ(got, ValueOf(key)) << key;
  }
  drive::ExtentStore& drives = h.ReopenDrives();
  for (const auto& [key, version] : others) {
    Result<std::vector<uint8_t>> on_drive = drives.Get(key);
    ASSERT_TRUE(on_drive.ok()) << key << ": " << on_drive.status().ToString();
    EXPECT_EQ(*on_drive, ValueOf(key)) << key;
  }
  drives.SetTenants(Tenants(8 * kValue, 16 * kValue));
  EXPECT_EQ(drives.TenantUsages().at(0).drive_keys, 16u) << "rebuilt from the index";
  for (int i = 144; i < 160; ++i) EXPECT_TRUE(drives.Exists("a/" + std::to_string(i))) << i;
}

TEST(TieredStoreTenantTest, PinnedValuesFillingTheDramQuotaRefuseTheTenantsNextPutOnly) {
  for (bool with_drives : {false, true}) {
    SCOPED_TRACE(with_drives ? "tiered" : "memory");
    TierHarness h(kPoolBytes, with_drives);
    TieredStore& store = h.store();
    store.SetTenants(Tenants(3 * kValue, 0));
    PutOptions pin;
    pin.retention = Retention::kPinned;
    for (int i = 0; i < 3; ++i) {
      const std::string key = "a/pin" + std::to_string(i);
      ASSERT_TRUE(PutNow(store, h.loop(), key, ValueOf(key), pin).ok());
    }
    Status refused = PutNow(store, h.loop(), "a/next", ValueOf("a/next"));
    EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(refused.message().find("tenant team-a is at its DRAM quota (tenants[].dram_quota"), std::string::npos)
        << refused.ToString();
    EXPECT_FALSE(store.Exists("a/next"));
    ASSERT_TRUE(PutNow(store, h.loop(), "b/1", ValueOf("b/1")).ok());
    ASSERT_TRUE(PutNow(store, h.loop(), "admin", ValueOf("admin")).ok());
    for (int i = 0; i < 3; ++i) {
      const std::string key = "a/pin" + std::to_string(i);
      EXPECT_EQ(*GetBytes(store, h.loop(), key), ValueOf(key));
    }
    const TenantUsage a = store.TenantUsages().at(0);
    EXPECT_EQ(a.quota_refusals, 1u);
    EXPECT_EQ(a.dram_keys, 3u);
    EXPECT_EQ(a.drive_keys, with_drives ? 3u : 0u);
  }
}

TEST(TieredStoreTenantTest, PinnedValuesFillingTheDriveQuotaRefuseTheTenantsNextPut) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  store.SetTenants(Tenants(0, 2 * kValue));
  PutOptions pin;
  pin.retention = Retention::kPinned;
  ASSERT_TRUE(PutNow(store, h.loop(), "a/pin0", ValueOf("a/pin0"), pin).ok());
  ASSERT_TRUE(PutNow(store, h.loop(), "a/pin1", ValueOf("a/pin1"), pin).ok());
  Status refused = PutNow(store, h.loop(), "a/next", ValueOf("a/next"));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("tenant team-a is at its drive quota (tenants[].drive_quota"), std::string::npos)
      << refused.ToString();
  EXPECT_FALSE(store.Exists("a/next"));
  ASSERT_TRUE(PutNow(store, h.loop(), "b/1", ValueOf("b/1")).ok());
  EXPECT_EQ(store.TenantUsages().at(0).quota_refusals, 1u);
  EXPECT_EQ(store.TenantUsages().at(0).drive_bytes, 2 * kValue);
}

TEST(TieredStoreTenantTest, PromotionStaysWithinTheDramQuotaAndNeverFailsTheGet) {
  TierHarness h(kPoolBytes, /*with_drives=*/true);
  TieredStore& store = h.store();
  store.SetTenants(Tenants(2 * kValue, 0));
  for (int i = 0; i < 6; ++i) {
    const std::string key = "a/" + std::to_string(i);
    ASSERT_TRUE(PutNow(store, h.loop(), key, ValueOf(key)).ok());
  }
  ASSERT_TRUE(PutNow(store, h.loop(), "b/0", ValueOf("b/0")).ok());
  EXPECT_FALSE(store.memory().Exists("a/0"));
  // Promoted: a's own coldest makes room.
  Result<StoredValue> got = GetNow(store, h.loop(), "a/0");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->pinned());
  EXPECT_EQ(BytesOf(*got), ValueOf("a/0"));
  EXPECT_LE(store.TenantUsages().at(0).dram_bytes, 2 * kValue);
  EXPECT_TRUE(store.memory().Exists("b/0"));
  // Both of a's DRAM values held by readers: the next promotion is skipped,
  // the get still served (from a buffer of its own).
  Result<StoredValue> other = GetNow(store, h.loop(), "a/5");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other->pinned());
  const uint64_t refusals = store.TenantUsages().at(0).quota_refusals;
  Result<StoredValue> third = GetNow(store, h.loop(), "a/1");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_FALSE(third->pinned());
  EXPECT_EQ(BytesOf(*third), ValueOf("a/1"));
  EXPECT_EQ(store.TenantUsages().at(0).quota_refusals, refusals) << "a skipped promotion is not a refused put";
  EXPECT_LE(store.TenantUsages().at(0).dram_bytes, 2 * kValue);
}

TEST(TieredStoreTenantTest, WithoutTenantsReserveByKeyIsPlainReserve) {
  TierHarness h(2 << 20, /*with_drives=*/false);  // 64 values
  TieredStore& store = h.store();
  EXPECT_TRUE(store.TenantUsages().empty());
  for (int i = 0; i < 70; ++i) {
    const std::string key = "a/" + std::to_string(i);
    ASSERT_TRUE(PutNow(store, h.loop(), key, ValueOf(key)).ok());
  }
  EXPECT_EQ(store.MemoryStats().keys, 64u) << "pool eviction as ever";
  store.SetTenants(Tenants(kValue, 0));
  const TenantUsage a = store.TenantUsages().at(0);
  EXPECT_EQ(a.dram_keys, 64u);
  EXPECT_EQ(a.dram_bytes, 64 * kValue);
  EXPECT_EQ(a.drive_keys, 0u);
}

}  // namespace
}  // namespace memkv::tier
