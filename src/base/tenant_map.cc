#include "base/tenant_map.h"

#include <algorithm>

namespace memkv {

TenantMap::TenantMap(std::vector<TenantLimits> tenants) {
  for (TenantLimits& t : tenants) {
    if (t.prefix.empty() || by_prefix_.contains(t.prefix) || FindByName(t.name) != kNone) continue;
    by_prefix_.emplace(t.prefix, static_cast<uint32_t>(tenants_.size()));
    prefix_lengths_.push_back(t.prefix.size());
    tenants_.push_back(std::move(t));
  }
  std::sort(prefix_lengths_.begin(), prefix_lengths_.end());
  prefix_lengths_.erase(std::unique(prefix_lengths_.begin(), prefix_lengths_.end()), prefix_lengths_.end());
}

uint32_t TenantMap::Find(std::string_view key) const {
  for (size_t length : prefix_lengths_) {
    if (length > key.size()) break;
    auto it = by_prefix_.find(key.substr(0, length));
    if (it != by_prefix_.end()) return it->second;
  }
  return kNone;
}

uint32_t TenantMap::FindByName(std::string_view name) const {
  for (size_t i = 0; i < tenants_.size(); ++i) {
    if (tenants_[i].name == name) return static_cast<uint32_t>(i);
  }
  return kNone;
}

}  // namespace memkv
