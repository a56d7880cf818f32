#include "storage/policy/quota/tenant_quotas.h"

#include <utility>

#include "base/units.h"

namespace memkv::storage::policy {
namespace {

const char* KindName(QuotaKind kind) { return kind == QuotaKind::kDram ? "DRAM" : "drive"; }
const char* Setting(QuotaKind kind) {
  return kind == QuotaKind::kDram ? "tenants[].dram_quota" : "tenants[].drive_quota";
}

}  // namespace

void TenantQuotas::OnLink(PolicyEntry& e) {
  e.tenant = TenantOf(e.stored_key);
  if (e.tenant == TenantMap::kNone) return;
  Row& row = rows_[e.tenant];
  row.lru->PushFront(e);
  row.bytes += e.value_bytes;
  ++row.keys;
}

void TenantQuotas::OnUnlink(PolicyEntry& e, Removal why) {
  if (e.tenant == TenantMap::kNone) return;
  Row& row = rows_[e.tenant];
  row.lru->Remove(e);
  row.bytes -= e.value_bytes;
  --row.keys;
  if (why == Removal::kEvicted) ++row.evictions;
}

void TenantQuotas::OnTouch(PolicyEntry& e, int64_t) {
  if (e.tenant != TenantMap::kNone) rows_[e.tenant].lru->MoveToFront(e);
}

void TenantQuotas::SetTenants(std::shared_ptr<const TenantMap> tenants, const EntryList& lru) {
  if (tenants != nullptr && tenants->empty()) tenants = nullptr;
  if (tenants == nullptr && tenants_ == nullptr) return;
  std::vector<Row> rows(tenants != nullptr ? tenants->size() : 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t old = tenants_ != nullptr ? tenants_->FindByName((*tenants)[uint32_t(i)].name) : TenantMap::kNone;
    if (old == TenantMap::kNone) continue;
    rows[i].evictions = rows_[old].evictions;
    rows[i].quota_evictions = rows_[old].quota_evictions;
    rows[i].quota_refusals = rows_[old].quota_refusals;
  }
  rows_ = std::move(rows);
  tenants_ = std::move(tenants);
  // Coldest first, each into its tenant's list at the front: every list
  // keeps the order of the tier's LRU.
  lru.ForEachColdestFirst([&](PolicyEntry& e) {
    e.tenant_lru.prev = &e.tenant_lru;
    e.tenant_lru.next = &e.tenant_lru;
    OnLink(e);
    return true;
  });
}

uint64_t TenantQuotas::quota(uint32_t t) const {
  const TenantLimits& l = limits(t);
  return kind_ == QuotaKind::kDram ? l.dram_quota_bytes : l.drive_quota_bytes;
}

Status TenantQuotas::ChooseRoom(uint32_t t, std::string_view key, uint64_t size, uint64_t replaced, uint64_t others,
                                int64_t now_ms, std::span<const PassMask> passes, const SpareFn* spare,
                                std::vector<PolicyEntry*>* victims) const {
  const uint64_t limit = quota(t);
  if (limit == 0) return Status::Ok();
  const Row& row = rows_[t];
  const uint64_t in_use = row.bytes - replaced + others;
  if (in_use + size <= limit) return Status::Ok();
  const std::string& name = limits(t).name;
  if (size > limit) {
    return ResourceExhausted("tenant " + name + ": a value of " + FormatSizeRounded(size) + " is larger than its " +
                             KindName(kind_) + " quota (" + Setting(kind_) + " " + FormatSizeRounded(limit) + ")");
  }
  // Choose first, evict after: a put that fails anyway evicts nothing.
  const uint64_t need = in_use + size - limit;
  uint64_t freed = 0;
  const size_t first = victims->size();
  ScanByPass(*row.lru, passes, now_ms, spare, [&](PolicyEntry& e, VictimClass) {
    if (e.value_bytes != 0 && e.stored_key != key) {
      victims->push_back(&e);
      freed += e.value_bytes;
    }
    return freed < need;
  });
  if (freed >= need) return Status::Ok();
  victims->resize(first);
  return ResourceExhausted("tenant " + name + " is at its " + KindName(kind_) + " quota (" + Setting(kind_) + " " +
                           FormatSizeRounded(limit) + ", " + FormatSizeRounded(row.bytes) + " used" +
                           (others != 0 ? ", " + FormatSizeRounded(others) + " held by puts in flight" : "") +
                           "; a put of " + FormatSizeRounded(size) + " needs " + FormatSizeRounded(need) +
                           (passes.empty() ? " freed; evict its values first)"
                                           : " freed and what is left is pinned or being read)"));
}

void TenantQuotas::CountEviction(uint32_t t, bool for_quota) {
  if (t == TenantMap::kNone || t >= rows_.size()) return;
  ++rows_[t].evictions;
  if (for_quota) ++rows_[t].quota_evictions;
}

std::vector<TenantUsage> TenantQuotas::Usages() const {
  std::vector<TenantUsage> out(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    TenantUsage& u = out[i];
    (kind_ == QuotaKind::kDram ? u.dram_bytes : u.drive_bytes) = row.bytes;
    (kind_ == QuotaKind::kDram ? u.dram_keys : u.drive_keys) = row.keys;
    u.evictions = row.evictions;
    u.quota_evictions = row.quota_evictions;
    u.quota_refusals = row.quota_refusals;
  }
  return out;
}

}  // namespace memkv::storage::policy
