// MemoryStore and tenant DRAM quotas (memory_store.h, "Tenant quotas"): a
// tenant at its quota makes room from its own values only, refuses what it
// cannot place without touching anything stored, and no tenants means no
// change.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/checksum.h"
#include "base/tenant_map.h"
#include "storage/memory_store.h"

namespace memkv::storage {
namespace {

constexpr uint64_t kValue = 64 << 10;  // whole pool units: room == size

std::vector<uint8_t> Bytes(const std::string& key, uint32_t version) {
  std::vector<uint8_t> v(kValue);
  uint32_t x = uint32_t(std::hash<std::string>{}(key)) * 2654435761u + version;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = uint8_t(x >> 24);
  }
  return v;
}

std::shared_ptr<const TenantMap> Tenants(uint64_t a_quota, uint64_t b_quota) {
  return std::make_shared<const TenantMap>(std::vector<TenantLimits>{
      {.name = "team-a", .prefix = "a/", .dram_quota_bytes = a_quota},
      {.name = "team-b", .prefix = "b/", .dram_quota_bytes = b_quota},
  });
}

class TenantQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = MemoryStore::Create(MemoryStoreOptions{.max_size_bytes = 4 << 20, .block_size_bytes = 64 << 10});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    store_ = std::move(created).value();
  }

  // A put through BeginPut(size, key), as the server makes one.
  Status Put(const std::string& key, uint32_t version = 0, const PutOptions& options = {}) {
    const std::vector<uint8_t> v = Bytes(key, version);
    Result<PendingPut> put = store_->BeginPut(v.size(), key);
    if (!put.ok()) return put.status();
    const uint8_t* in = v.data();
    for (const iovec& piece : put->iov()) {
      std::memcpy(piece.iov_base, in, piece.iov_len);
      in += piece.iov_len;
    }
    Status s = store_->CommitPut(std::move(put).value(), key, Checksum(v.data(), v.size()), options);
    if (s.ok()) versions_[key] = version;
    return s;
  }

  // Every byte of every value of `prefix` put so far is still there.
  void ExpectIntact(const std::string& prefix) {
    size_t checked = 0;
    for (const auto& [key, version] : versions_) {
      if (key.rfind(prefix, 0) != 0) continue;
      Result<ReadHandle> h = store_->Get(key);
      ASSERT_TRUE(h.ok()) << key << ": " << h.status().ToString();
      std::vector<uint8_t> got(h->size());
      h->CopyTo(got.data());
      EXPECT_EQ(got, Bytes(key, version)) << key;
      ++checked;
    }
    EXPECT_GT(checked, 0u) << prefix;
  }

  TenantUsage Usage(size_t tenant) { return store_->TenantUsages().at(tenant); }

  std::unique_ptr<MemoryStore> store_;
  std::map<std::string, uint32_t> versions_;
};

TEST_F(TenantQuotaTest, ATenantWritingTenTimesItsQuotaEvictsOnlyItsOwnValues) {
  // Pool 64 values; a's quota 16; b holds 24, the administrator 24: the
  // pool is full once a is at its quota, so without the quota a's puts
  // would push out b's and the administrator's (colder) values.
  store_->SetTenants(Tenants(16 * kValue, 32 * kValue));
  for (int i = 0; i < 24; ++i) ASSERT_TRUE(Put("b/" + std::to_string(i)).ok());
  for (int i = 0; i < 24; ++i) ASSERT_TRUE(Put("admin/" + std::to_string(i)).ok());
  for (int i = 0; i < 160; ++i) {
    ASSERT_TRUE(Put("a/" + std::to_string(i)).ok()) << i;
    ASSERT_LE(Usage(0).dram_bytes, 16 * kValue) << i;
  }
  ExpectIntact("b/");
  ExpectIntact("admin/");
  EXPECT_EQ(Usage(0).dram_bytes, 16 * kValue);
  EXPECT_EQ(Usage(0).dram_keys, 16u);
  EXPECT_EQ(Usage(0).quota_evictions, 144u);
  EXPECT_EQ(Usage(0).evictions, 144u);
  EXPECT_EQ(Usage(1).dram_bytes, 24 * kValue);
  EXPECT_EQ(Usage(1).evictions, 0u);
  // a's newest 16 are what it kept (coldest first went).
  for (int i = 144; i < 160; ++i) EXPECT_TRUE(store_->Exists("a/" + std::to_string(i))) << i;
  EXPECT_FALSE(store_->Exists("a/143"));
}

TEST_F(TenantQuotaTest, ReplacingAKeyCountsItsOldValueAsFreed) {
  store_->SetTenants(Tenants(2 * kValue, 0));
  ASSERT_TRUE(Put("a/1").ok());
  ASSERT_TRUE(Put("a/2").ok());
  ASSERT_TRUE(Put("a/2", 1).ok());  // at the quota: replaces, evicts nothing
  EXPECT_EQ(Usage(0).quota_evictions, 0u);
  ExpectIntact("a/");
  EXPECT_EQ(Usage(0).dram_bytes, 2 * kValue);
}

TEST_F(TenantQuotaTest, PinnedValuesFillingTheQuotaRefuseTheNextPutNamingTheQuota) {
  store_->SetTenants(Tenants(4 * kValue, 0));
  PutOptions pin;
  pin.retention = Retention::kPinned;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put("a/pin" + std::to_string(i), 0, pin).ok());
  ASSERT_TRUE(Put("a/held").ok());
  Result<ReadHandle> reader = store_->Get("a/held");  // being read: not evictable now
  ASSERT_TRUE(reader.ok());
  Status refused = Put("a/new");
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("tenant team-a is at its DRAM quota"), std::string::npos) << refused.ToString();
  EXPECT_NE(refused.message().find("tenants[].dram_quota"), std::string::npos) << refused.ToString();
  EXPECT_EQ(Usage(0).quota_refusals, 1u);
  // A replace refused keeps the old value.
  Status replace = Put("a/held", 7);
  EXPECT_EQ(replace.code(), StatusCode::kOk) << "a replace of the same size fits: " << replace.ToString();
  reader = Result<ReadHandle>(NotFound(""));
  ExpectIntact("a/");
  // The other tenant and the administrator still store.
  ASSERT_TRUE(Put("b/1").ok());
  ASSERT_TRUE(Put("admin").ok());
  EXPECT_EQ(Usage(0).dram_bytes, 4 * kValue);
}

TEST_F(TenantQuotaTest, ARefusedReplaceKeepsTheOldValue) {
  store_->SetTenants(Tenants(3 * kValue, 0));
  PutOptions pin;
  pin.retention = Retention::kPinned;
  ASSERT_TRUE(Put("a/pin0", 0, pin).ok());
  ASSERT_TRUE(Put("a/pin1", 0, pin).ok());
  ASSERT_TRUE(Put("a/small").ok());
  // A replace that needs more than its old value: everything else is pinned.
  const std::vector<uint8_t> big(2 * kValue, 'x');
  Result<PendingPut> put = store_->BeginPut(big.size(), "a/small");
  EXPECT_EQ(put.status().code(), StatusCode::kResourceExhausted);
  // CommitPut checks too (a put reserved without its key).
  Result<PendingPut> unchecked = store_->BeginPut(big.size());
  ASSERT_TRUE(unchecked.ok());
  Status committed = store_->CommitPut(std::move(unchecked).value(), "a/small", Checksum(big.data(), big.size()));
  EXPECT_EQ(committed.code(), StatusCode::kResourceExhausted) << committed.ToString();
  EXPECT_EQ(Usage(0).quota_refusals, 2u);
  ExpectIntact("a/");
  EXPECT_EQ(store_->Stats().keys, 3u);
}

TEST_F(TenantQuotaTest, LoweringAQuotaAtRunTimeTakesEffectOnTheNextPut) {
  store_->SetTenants(Tenants(10 * kValue, 0));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("a/" + std::to_string(i)).ok());
  ASSERT_TRUE(Put("b/0").ok());
  EXPECT_EQ(Usage(0).dram_keys, 8u);
  store_->SetTenants(Tenants(4 * kValue, 0));
  EXPECT_EQ(Usage(0).dram_bytes, 8 * kValue) << "recounted, nothing evicted by the reload itself";
  ASSERT_TRUE(Put("a/new").ok());
  EXPECT_EQ(Usage(0).dram_bytes, 4 * kValue);
  EXPECT_EQ(Usage(0).quota_evictions, 5u);
  EXPECT_TRUE(store_->Exists("a/new"));
  EXPECT_TRUE(store_->Exists("a/7"));
  EXPECT_FALSE(store_->Exists("a/4"));
  ExpectIntact("b/");
  // Counters stay with a tenant of the same name, wherever it is listed.
  store_->SetTenants(std::make_shared<const TenantMap>(std::vector<TenantLimits>{
      {.name = "team-c", .prefix = "c/"}, {.name = "team-a", .prefix = "a/", .dram_quota_bytes = 4 * kValue}}));
  EXPECT_EQ(Usage(1).quota_evictions, 5u);
  EXPECT_EQ(Usage(1).dram_keys, 4u);
  EXPECT_EQ(Usage(0).dram_keys, 0u);
  // No tenants: no quota and no rows.
  store_->SetTenants(nullptr);
  EXPECT_TRUE(store_->TenantUsages().empty());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("a/more" + std::to_string(i)).ok());
  EXPECT_TRUE(store_->Exists("a/7"));
}

TEST_F(TenantQuotaTest, ExpiredAndEvictFirstValuesOfTheTenantGoFirst) {
  store_->SetTenants(Tenants(3 * kValue, 0));
  PutOptions first;
  first.retention = Retention::kEvictFirst;
  ASSERT_TRUE(Put("a/old").ok());
  ASSERT_TRUE(Put("a/first", 0, first).ok());
  ASSERT_TRUE(Put("a/recent").ok());
  ASSERT_TRUE(Put("a/next").ok());
  EXPECT_FALSE(store_->Exists("a/first"));
  EXPECT_TRUE(store_->Exists("a/old"));
}

TEST_F(TenantQuotaTest, AValueLargerThanTheQuotaIsRefused) {
  store_->SetTenants(Tenants(kValue / 2, 0));
  Status s = Put("a/1");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("tenants[].dram_quota"), std::string::npos) << s.ToString();
}

TEST_F(TenantQuotaTest, ReloadsWhilePutsRunKeepTheCountsTrue) {
  // Writers of both tenants and the administrator overwrite keys of their
  // own while the tenants are reloaded with other quotas, other orders and
  // none; afterwards each tenant's counts are what is stored under its prefix.
  const auto first = Tenants(6 * kValue, 10 * kValue);
  const auto swapped = std::make_shared<const TenantMap>(std::vector<TenantLimits>{
      {.name = "team-b", .prefix = "b/", .dram_quota_bytes = 4 * kValue},
      {.name = "team-a", .prefix = "a/", .dram_quota_bytes = 3 * kValue}});
  store_->SetTenants(first);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (const std::string prefix : {"a/", "b/", "admin/"}) {
    writers.emplace_back([&, prefix] {
      const std::vector<uint8_t> v(kValue / 2, 'v');
      for (int i = 0; !stop.load(); ++i) {
        const std::string key = prefix + std::to_string(i % 20);
        Result<PendingPut> put = store_->BeginPut(v.size(), key);
        if (!put.ok()) continue;
        (void)store_->CommitPut(std::move(put).value(), key, Checksum(v.data(), v.size()));
      }
    });
  }
  for (int round = 0; round < 300; ++round) {
    store_->SetTenants(round % 3 == 0 ? first : round % 3 == 1 ? swapped : nullptr);
  }
  store_->SetTenants(first);
  stop.store(true);
  for (std::thread& t : writers) t.join();
  for (size_t t = 0; t < 2; ++t) {
    const std::string prefix = t == 0 ? "a/" : "b/";
    uint64_t keys = 0;
    for (int i = 0; i < 20; ++i) keys += store_->Exists(prefix + std::to_string(i)) ? 1 : 0;
    EXPECT_EQ(Usage(t).dram_keys, keys) << prefix;
    EXPECT_EQ(Usage(t).dram_bytes, keys * (kValue / 2)) << prefix;
  }
  // A last put under the first quotas evicts a back under 6 values' worth.
  ASSERT_TRUE(Put("a/last").ok());
  EXPECT_LE(Usage(0).dram_bytes, 6 * kValue);
}

}  // namespace
}  // namespace memkv::storage
