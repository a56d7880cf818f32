// ExtentStore: tenant usage and drive quotas (extent_store.h, "Tenant drive
// quotas"). The eviction that makes room in a quota (EvictForTenantQuota)
// is with the others in extent_store.cc.
#include <utility>

#include "base/units.h"
#include "drive/extent_store_impl.h"

namespace memkv::drive {

void ExtentStore::Impl::CountTenantLocked(Entry& e, int sign) {
  if (sign > 0) e.tenant = tenants != nullptr ? tenants->Find(e.key) : TenantMap::kNone;
  if (e.tenant == TenantMap::kNone) return;
  TenantUsage& u = tenant_usage[e.tenant];
  if (sign > 0) {
    u.drive_bytes += e.value_bytes;
    u.drive_keys++;
  } else {
    u.drive_bytes -= e.value_bytes;
    u.drive_keys--;
  }
}

std::string ExtentStore::Impl::TenantQuotaMessageLocked(uint32_t t, const std::string& detail) const {
  const TenantLimits& limits = (*tenants)[t];
  return "tenant " + limits.name + " is at its drive quota (tenants[].drive_quota " +
         FormatSizeRounded(limits.drive_quota_bytes) + ", " + FormatSizeRounded(tenant_usage[t].drive_bytes) +
         " used; " + detail + ")";
}

Status ExtentStore::Impl::TenantQuotaLocked(std::string_view key, uint64_t value_bytes) {
  if (tenants == nullptr) return Status::Ok();
  const uint32_t t = tenants->Find(key);
  if (t == TenantMap::kNone) return Status::Ok();
  const uint64_t quota = (*tenants)[t].drive_quota_bytes;
  if (quota == 0) return Status::Ok();
  auto current = index.find(key);
  const uint64_t replaced = current != index.end() && current->second->tenant == t ? current->second->value_bytes : 0;
  if (tenant_usage[t].drive_bytes - replaced + value_bytes <= quota) return Status::Ok();
  tenant_usage[t].quota_refusals++;
  return ResourceExhausted("put " + KeyForLog(key) + ": " +
                           TenantQuotaMessageLocked(t, "a put of " + std::to_string(value_bytes) +
                                                           " bytes does not fit; evict its values first"));
}

void ExtentStore::Impl::CountTenantEvictionLocked(std::string_view key, bool for_quota) {
  if (tenants == nullptr) return;
  const uint32_t t = tenants->Find(key);
  if (t == TenantMap::kNone) return;
  tenant_usage[t].evictions++;
  if (for_quota) tenant_usage[t].quota_evictions++;
}

void ExtentStore::SetTenants(std::shared_ptr<const TenantMap> tenants) {
  Impl& s = *impl_;
  s.SetSealTenants(tenants);
  if (tenants != nullptr && tenants->empty()) tenants = nullptr;
  std::lock_guard<std::mutex> lock(s.mu);
  if (tenants == nullptr && s.tenants == nullptr) return;
  std::vector<TenantUsage> usage(tenants != nullptr ? tenants->size() : 0);
  for (size_t i = 0; i < usage.size(); ++i) {
    const uint32_t old = s.tenants != nullptr ? s.tenants->FindByName((*tenants)[uint32_t(i)].name) : TenantMap::kNone;
    if (old == TenantMap::kNone) continue;
    usage[i].evictions = s.tenant_usage[old].evictions;
    usage[i].quota_evictions = s.tenant_usage[old].quota_evictions;
    usage[i].quota_refusals = s.tenant_usage[old].quota_refusals;
  }
  s.tenants = std::move(tenants);
  s.tenant_usage = std::move(usage);
  for (auto& [key, e] : s.index) s.CountTenantLocked(*e, 1);
}

std::vector<TenantUsage> ExtentStore::TenantUsages() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->tenant_usage;
}

}  // namespace memkv::drive
