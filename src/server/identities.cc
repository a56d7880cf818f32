#include "server/identities.h"

#include <algorithm>
#include <utility>

namespace memkv::server {

void IdentityCounters::CountLookups(uint64_t n, uint64_t hits, uint64_t served, uint64_t bytes) {
  lookups.fetch_add(n, std::memory_order_relaxed);
  if (hits > 0) found.fetch_add(hits, std::memory_order_relaxed);
  if (served > 0) fetched.fetch_add(served, std::memory_order_relaxed);
  if (bytes > 0) fetched_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void IdentityCounters::CountStored(uint64_t n, uint64_t bytes) {
  if (n == 0) return;
  stores.fetch_add(n, std::memory_order_relaxed);
  stored_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

Identities::Identities(IdentitiesOptions options, TenantMap tenants)
    : options_(std::move(options)), tenants_(std::move(tenants)) {}

namespace {
std::string RowName(std::string_view tenant, std::string_view identity) {
  std::string name(tenant);
  return name.append("\n").append(identity);
}
}  // namespace

IdentityCounters* Identities::FindLocked(std::string_view tenant, std::string_view identity) const {
  auto it = by_name_.find(RowName(tenant, identity));
  return it == by_name_.end() ? nullptr : it->second;
}

IdentityCounters* Identities::RowLocked(std::string_view tenant, std::string_view identity) {
  if (IdentityCounters* row = FindLocked(tenant, identity)) return row;
  auto& row = rows_.emplace_back(std::piecewise_construct,
                                 std::forward_as_tuple(std::string(tenant), std::string(identity)),
                                 std::forward_as_tuple());
  by_name_.emplace(RowName(tenant, identity), &row.second);
  return &row.second;
}

Result<IdentityCounters*> Identities::Admit(std::string_view tenant, const CacheIdentity& identity,
                                            const std::string& tag) {
  const bool accepted =
      options_.accept.empty() || std::any_of(options_.accept.begin(), options_.accept.end(),
                                             [&](const IdentitySelector& s) { return s.Matches(identity, tag); });
  if (!accepted) {
    std::string list;
    for (const IdentitySelector& selector : options_.accept) list += (list.empty() ? "'" : ", '") + selector.text() + "'";
    return PermissionDenied("cache identity " + tag + " (model '" + identity.model + "', kv_dtype '" +
                            identity.kv_dtype + "', block_tokens " + std::to_string(identity.block_tokens) +
                            ", tp_rank " + std::to_string(identity.tp_rank) + "/" + std::to_string(identity.tp_size) +
                            ") is not one this server serves; allowed: its identities.accept: " + list);
  }
  MutexLock lock(mu_);
  known_.try_emplace(tag, identity);
  if (IdentityCounters* row = FindLocked(tenant, tag)) return row;
  if (own_rows_ >= options_.max) return RowLocked(tenant, kOther);
  ++own_rows_;
  return RowLocked(tenant, tag);
}

IdentityCounters* Identities::Unidentified(std::string_view tenant) {
  MutexLock lock(mu_);
  return RowLocked(tenant, kNone);
}

std::string_view Identities::TagOf(std::string_view key) {
  if (key.size() < CacheIdentity::kTagChars + 2 || key[0] != '@' || key[CacheIdentity::kTagChars + 1] != '/') return {};
  std::string_view tag = key.substr(1, CacheIdentity::kTagChars);
  return IsIdentityTag(tag) ? tag : std::string_view();
}

void Identities::CountRemoval(const storage::StoreEvent& e) {
  const auto counted = std::find(kCountedRemovals.begin(), kCountedRemovals.end(), e.reason);
  if (counted == kCountedRemovals.end()) return;
  const size_t reason = static_cast<size_t>(counted - kCountedRemovals.begin());
  std::string_view key = e.key;
  std::string_view tenant;
  const uint32_t t = tenants_.Find(key);
  if (t != TenantMap::kNone) {
    tenant = tenants_[t].name;
    key.remove_prefix(tenants_[t].prefix.size());
  }
  std::string_view tag = TagOf(key);
  IdentityCounters* row;
  {
    MutexLock lock(mu_);
    if (tag.empty()) {
      row = RowLocked(tenant, kNone);
    } else {
      row = FindLocked(tenant, tag);
      if (row == nullptr) row = RowLocked(tenant, kOther);
    }
  }
  const size_t tier = e.medium == storage::StoreMedium::kDrive ? 1 : 0;
  row->evictions[tier][reason].fetch_add(1, std::memory_order_relaxed);
}

std::vector<Identities::Row> Identities::Snapshot() const {
  MutexLock lock(mu_);
  std::vector<Row> out;
  out.reserve(rows_.size());
  for (const auto& [name, counters] : rows_) out.push_back({name.first, name.second, &counters});
  return out;
}

std::map<std::string, CacheIdentity> Identities::Known() const {
  MutexLock lock(mu_);
  return known_;
}

}  // namespace memkv::server
