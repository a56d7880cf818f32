// ExtentStore: tenant usage and drive quotas (extent_store.h, "Tenant drive
// quotas"). The usage rows, the tenants' LRU lists and the choice of a
// tenant's victims are the storage policy kit's (storage/policy/quota/);
// the eviction that makes room in a quota (EvictForTenantQuota) is with the
// others in extent_store.cc.
#include <utility>

#include "drive/extent_store_impl.h"

namespace memkv::drive {

Status ExtentStore::Impl::TenantQuotaLocked(std::string_view key, uint64_t value_bytes) {
  storage::policy::TenantQuotas& quotas = policies.quota();
  const uint32_t t = quotas.TenantOf(key);
  if (t == TenantMap::kNone) return Status::Ok();
  auto current = index.find(key);
  const uint64_t replaced =
      storage::policy::TenantQuotas::ReplacedBytes(t, current != index.end() ? current->second.get() : nullptr);
  // No passes: a put checks the quota here and evicts nothing
  // (EvictForTenantQuota made the room before it).
  std::vector<storage::policy::PolicyEntry*> none;
  Status room = quotas.ChooseRoom(t, key, value_bytes, replaced, 0, 0, {}, nullptr, &none);
  if (room.ok()) return room;
  quotas.CountRefusal(t);
  return ResourceExhausted("put " + KeyForLog(key) + ": " + room.message());
}

void ExtentStore::Impl::CountTenantEvictionLocked(std::string_view key, bool for_quota) {
  policies.quota().CountEviction(policies.quota().TenantOf(key), for_quota);
}

void ExtentStore::SetTenants(std::shared_ptr<const TenantMap> tenants) {
  Impl& s = *impl_;
  s.SetSealTenants(tenants);
  MutexLock lock(s.mu);
  s.policies.quota().SetTenants(std::move(tenants), s.policies.eviction().lru());
}

std::vector<TenantUsage> ExtentStore::TenantUsages() const {
  MutexLock lock(impl_->mu);
  return impl_->policies.quota().Usages();
}

}  // namespace memkv::drive
