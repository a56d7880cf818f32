// MemoryStore: tenant quotas (memory_store.h, docs/storage.md "Tenant
// quotas"). The usage rows, the tenants' LRU lists and the choice of a
// tenant's victims are the kit's (policy/quota/tenant_quotas.h); here the
// store evicts what it chose.
#include <utility>
#include <vector>

#include "storage/memory_store_impl.h"

namespace memkv::storage {
namespace {

// The DRAM pool's order within a tenant's quota: expired and evict_first
// values first, coldest first, then the others in plain LRU order (the
// leaves-first order is not applied inside a tenant).
constexpr policy::PassMask kQuotaPasses[] = {
    policy::Pass({policy::VictimClass::kExpired, policy::VictimClass::kEvictFirst}),
    policy::Pass({policy::VictimClass::kNormal}),
};

}  // namespace

Status MemoryStore::Impl::TenantRoomLocked(uint32_t t, std::string_view key, uint64_t size, uint64_t replaced,
                                           uint64_t others) {
  std::vector<policy::PolicyEntry*> victims;
  MEMKV_RETURN_IF_ERROR(policies.quota().ChooseRoom(t, key, size, replaced, others, realtime->NowMillis(),
                                                    kQuotaPasses, nullptr, &victims));
  for (policy::PolicyEntry* e : victims) {
    const bool expired_now = ExpiredLocked(static_cast<StoreEntry&>(*e));
    UnlinkLocked(index.find(e->stored_key), expired_now ? RemovalReason::kExpired : RemovalReason::kEvicted);
    if (!expired_now) policies.quota().CountQuotaEviction(t);
  }
  return Status::Ok();
}

void MemoryStore::SetTenants(std::shared_ptr<const TenantMap> tenants) {
  Impl& s = *impl_;
  MutexLock lock(s.mu);
  s.policies.quota().SetTenants(std::move(tenants), s.policies.eviction().lru());
  s.dram_holds.Reset(s.policies.quota().tenants() != nullptr ? s.policies.quota().tenants()->size() : 0);
}

std::vector<TenantUsage> MemoryStore::TenantUsages() const {
  MutexLock lock(impl_->mu);
  return impl_->policies.quota().Usages();
}

}  // namespace memkv::storage
