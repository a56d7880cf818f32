// TenantQuotas: the storage side of tenant quotas (docs/storage.md, "Tenant
// quotas"), for one tier: which tenant each linked value belongs to (the
// TenantMap prefix of its key), each tenant's value bytes and keys, an LRU
// list per tenant (intrusive, in the order of the tier's own LRU list), the
// choice of a tenant's own coldest values when a put would pass its quota,
// the eviction and refusal counters, and the refusal messages naming
// tenants[].dram_quota or tenants[].drive_quota.
//
// What puts in flight hold of a quota is QuotaLedger's (base/quota_ledger.h);
// the tier passes it in as `others`.
//
// Owned by Policies; every call under the owning tier's lock.
#ifndef MEMKV_STORAGE_POLICY_QUOTA_TENANT_QUOTAS_H_
#define MEMKV_STORAGE_POLICY_QUOTA_TENANT_QUOTAS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/tenant_map.h"
#include "memkv/status.h"
#include "storage/policy/eviction/eviction_order.h"
#include "storage/policy/policy.h"

namespace memkv::storage::policy {

// Which quota of TenantLimits a tier keeps.
enum class QuotaKind : uint8_t { kDram, kDrive };

class TenantQuotas final : public Policy {
 public:
  explicit TenantQuotas(QuotaKind kind) : kind_(kind) {}

  void OnLink(PolicyEntry& e) override;
  void OnUnlink(PolicyEntry& e, Removal why) override;
  void OnTouch(PolicyEntry& e, int64_t now_ms) override;

  // Replaces the tenant list (null or empty: none). A tenant that keeps its
  // name keeps its counters; every entry of `lru` (the tier's LRU list) is
  // recounted, coldest first, so each tenant's list keeps the LRU's order.
  void SetTenants(std::shared_ptr<const TenantMap> tenants, const EntryList& lru);
  bool active() const { return tenants_ != nullptr; }
  const TenantMap* tenants() const { return tenants_.get(); }
  // The tenant of `key` (TenantMap::kNone without tenants).
  uint32_t TenantOf(std::string_view key) const {
    return tenants_ == nullptr ? TenantMap::kNone : tenants_->Find(key);
  }
  const TenantLimits& limits(uint32_t t) const { return (*tenants_)[t]; }
  // Tenant t's quota of this tier's kind (0: none), and its value bytes here.
  uint64_t quota(uint32_t t) const;
  uint64_t used(uint32_t t) const { return rows_[t].bytes; }
  // The value bytes of `current` (the key's linked value, or null) when it
  // is tenant t's: what a put replacing it frees in the quota.
  static uint64_t ReplacedBytes(uint32_t t, const PolicyEntry* current) {
    return current != nullptr && current->tenant == t ? current->value_bytes : 0;
  }

  // Room in tenant t's quota for a value of `size` bytes under `key`, which
  // replaces `replaced` bytes of the tenant's, leaving `others` (what its
  // other puts in flight hold) to them. Ok with nothing chosen when it fits;
  // Ok with `victims` (the tenant's coldest values, never key's, by
  // `passes`; not unlinked) when evicting them makes it fit; else
  // ResourceExhausted naming the quota, with nothing chosen. No passes: a
  // check that chooses nothing. Counts nothing.
  Status ChooseRoom(uint32_t t, std::string_view key, uint64_t size, uint64_t replaced, uint64_t others,
                    int64_t now_ms, std::span<const PassMask> passes, const SpareFn* spare,
                    std::vector<PolicyEntry*>* victims) const;

  // Counters of tenant t's row. OnUnlink counts an eviction when told
  // Removal::kEvicted; a tier that learns of its evictions later counts
  // them here (kNone: nothing).
  void CountEviction(uint32_t t, bool for_quota);
  // Of the evictions OnUnlink counted, one made room in the tenant's quota.
  void CountQuotaEviction(uint32_t t) { ++rows_[t].quota_evictions; }
  void CountRefusal(uint32_t t) { ++rows_[t].quota_refusals; }

  // One row per tenant, in TenantMap order: this kind's bytes and keys
  // (dram_* or drive_*) and the counters.
  std::vector<TenantUsage> Usages() const;

 private:
  struct Row {
    uint64_t bytes = 0;  // value bytes of its linked entries
    uint64_t keys = 0;
    uint64_t evictions = 0;
    uint64_t quota_evictions = 0;
    uint64_t quota_refusals = 0;
    std::unique_ptr<EntryList> lru = std::make_unique<EntryList>(&PolicyEntry::tenant_lru);  // front: most recent
  };

  const QuotaKind kind_;
  std::shared_ptr<const TenantMap> tenants_;
  std::vector<Row> rows_;  // rows_[i] is tenants_'s i
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_QUOTA_TENANT_QUOTAS_H_
