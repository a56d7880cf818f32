// Tenant drive quotas on the extent store (extent_store.h, "Tenant drive
// quotas"): usage per tenant, a put past the quota refused naming it,
// EvictForTenantQuota making room from the tenant's own values only, and
// the usage rebuilt from the index after a reopen.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/tenant_map.h"
#include "drive/store_fixture.h"

namespace memkv::drive {
namespace {

constexpr uint64_t kValue = 16 << 10;

std::shared_ptr<const TenantMap> Tenants(uint64_t a_quota, uint64_t b_quota = 0) {
  return std::make_shared<const TenantMap>(std::vector<TenantLimits>{
      {.name = "team-a", .prefix = "a/", .drive_quota_bytes = a_quota},
      {.name = "team-b", .prefix = "b/", .drive_quota_bytes = b_quota},
  });
}

class ExtentStoreTenants : public ::testing::Test {
 protected:
  void SetUp() override { fx_.FormatAndOpen(); }

  Status Put(const std::string& key, uint32_t version = 0, const ValueAttrs* attrs = nullptr) {
    const std::vector<uint8_t> v = Pattern(kValue, std::hash<std::string>{}(key) + version);
    const iovec one{const_cast<uint8_t*>(v.data()), v.size()};
    Status s = store().PutIov(key, std::span<const iovec>(&one, 1), Checksum(v.data(), v.size()), attrs);
    if (s.ok()) versions_[key] = version;
    return s;
  }
  // As the tier puts: room in the tenant's quota first.
  Status PutInQuota(const std::string& key, uint32_t version = 0) {
    Result<std::vector<RemovedValue>> evicted = store().EvictForTenantQuota(key, kValue);
    if (!evicted.ok()) return evicted.status();
    for (const RemovedValue& r : *evicted) {
      EXPECT_EQ(r.key.rfind("a/", 0), 0u) << r.key;
      versions_.erase(r.key);
    }
    return Put(key, version);
  }
  void ExpectIntact(const std::string& prefix) {
    size_t checked = 0;
    for (const auto& [key, version] : versions_) {
      if (key.rfind(prefix, 0) != 0) continue;
      Result<std::vector<uint8_t>> got = store().Get(key);
      ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
      EXPECT_EQ(*got, Pattern(kValue, std::hash<std::string>{}(key) + version)) << key;
      ++checked;
    }
    EXPECT_GT(checked, 0u) << prefix;
  }
  TenantUsage Usage(size_t tenant) { return store().TenantUsages().at(tenant); }
  ExtentStore& store() { return *fx_.store; }

  StoreFixture fx_{2};
  std::map<std::string, uint32_t> versions_;
};

TEST_F(ExtentStoreTenants, APutPastTheQuotaIsRefusedNamingItAndOnlyTheTenantsValuesMakeRoom) {
  store().SetTenants(Tenants(8 * kValue));
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("b/" + std::to_string(i)).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put("admin/" + std::to_string(i)).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("a/" + std::to_string(i)).ok());
  Status refused = Put("a/8");
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("tenant team-a is at its drive quota (tenants[].drive_quota"), std::string::npos)
      << refused.ToString();
  EXPECT_EQ(Usage(0).quota_refusals, 1u);
  // A replace at the quota fits: its old value counts as freed.
  ASSERT_TRUE(Put("a/7", 1).ok());

  for (int i = 8; i < 80; ++i) {
    ASSERT_TRUE(PutInQuota("a/" + std::to_string(i)).ok()) << i;
    ASSERT_LE(Usage(0).drive_bytes, 8 * kValue);
  }
  ExpectIntact("b/");
  ExpectIntact("admin/");
  ExpectIntact("a/");
  EXPECT_EQ(Usage(0).drive_keys, 8u);
  EXPECT_EQ(Usage(0).quota_evictions, 72u);
  EXPECT_EQ(Usage(0).evictions, 72u);
  EXPECT_EQ(Usage(1).drive_keys, 6u);
  EXPECT_EQ(Usage(1).drive_bytes, 6 * kValue);
  EXPECT_EQ(Usage(1).evictions, 0u);
  EXPECT_FALSE(store().Exists("a/71"));
  EXPECT_TRUE(store().Exists("a/72"));
}

TEST_F(ExtentStoreTenants, PinnedValuesFillingTheQuotaRefuseTheNextPutAndTheOtherTenantStillStores) {
  store().SetTenants(Tenants(3 * kValue));
  ValueAttrs pinned;
  pinned.retention = Retention::kPinned;
  pinned.ttl_ms = 60'000;
  pinned.expires_at_ms = INT64_MAX / 2;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put("a/pin" + std::to_string(i), 0, &pinned).ok());
  Result<std::vector<RemovedValue>> room = store().EvictForTenantQuota("a/new", kValue);
  ASSERT_FALSE(room.ok());
  EXPECT_EQ(room.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(room.status().message().find("tenants[].drive_quota"), std::string::npos) << room.status().ToString();
  EXPECT_EQ(Usage(0).quota_refusals, 1u);
  EXPECT_EQ(Put("a/new").code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(Put("b/1").ok());
  ASSERT_TRUE(Put("admin").ok());
  ExpectIntact("a/");
  EXPECT_EQ(Usage(0).drive_keys, 3u);
}

TEST_F(ExtentStoreTenants, UsageIsRebuiltFromTheIndexAfterAReopenAndQuotasChangeAtRunTime) {
  store().SetTenants(Tenants(0));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Put("a/" + std::to_string(i)).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Put("b/" + std::to_string(i)).ok());
  ASSERT_TRUE(Put("admin").ok());
  ASSERT_TRUE(store().Delete("a/0").ok());
  ASSERT_TRUE(fx_.Open().ok());
  EXPECT_TRUE(store().TenantUsages().empty());
  store().SetTenants(Tenants(0));
  EXPECT_EQ(Usage(0).drive_keys, 4u);
  EXPECT_EQ(Usage(0).drive_bytes, 4 * kValue);
  EXPECT_EQ(Usage(1).drive_keys, 2u);
  // A lower quota applies from the next put.
  store().SetTenants(Tenants(2 * kValue));
  EXPECT_EQ(Usage(0).drive_keys, 4u) << "a reload evicts nothing by itself";
  EXPECT_EQ(Put("a/new").code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(PutInQuota("a/new").ok());
  EXPECT_EQ(Usage(0).drive_bytes, 2 * kValue);
  EXPECT_EQ(Usage(0).quota_evictions, 3u);
  store().SetTenants(Tenants(2 * kValue));
  EXPECT_EQ(Usage(0).quota_refusals, 1u) << "kept across a reload";
  EXPECT_EQ(Usage(0).quota_evictions, 3u);
  EXPECT_EQ(Usage(0).drive_bytes, 2 * kValue);
  ExpectIntact("b/");
  // Without tenants nothing is counted or refused.
  store().SetTenants(nullptr);
  EXPECT_TRUE(store().TenantUsages().empty());
  for (int i = 10; i < 14; ++i) ASSERT_TRUE(Put("a/" + std::to_string(i)).ok());
}

}  // namespace
}  // namespace memkv::drive
