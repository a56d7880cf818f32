#include "storage/policy/ttl/expiry_index.h"

#include <cstdint>
#include <utility>

namespace memkv::storage::policy {

int64_t ExpiryAfter(int64_t now_ms, uint64_t ttl_ms) {
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  if (ttl_ms == 0) return 0;
  if (now_ms < 0 || ttl_ms > kMax - static_cast<uint64_t>(now_ms)) return INT64_MAX;
  return now_ms + static_cast<int64_t>(ttl_ms);
}

void ExpiryIndex::OnLink(PolicyEntry& e) {
  if (e.expires_at_ms != 0) e.expiry_pos = by_expiry_.emplace(e.expires_at_ms, &e).first;
}

void ExpiryIndex::OnUnlink(PolicyEntry& e, Removal) {
  if (e.expires_at_ms != 0) by_expiry_.erase(e.expiry_pos);
}

void ExpiryIndex::SetExpiry(PolicyEntry& e, int64_t expires_at_ms) {
  if (e.expires_at_ms == expires_at_ms) return;
  if (e.expires_at_ms != 0 && expires_at_ms != 0) {
    auto node = by_expiry_.extract(e.expiry_pos);
    node.value().first = expires_at_ms;
    e.expiry_pos = by_expiry_.insert(std::move(node)).position;
  } else if (e.expires_at_ms != 0) {
    by_expiry_.erase(e.expiry_pos);
  } else {
    e.expiry_pos = by_expiry_.emplace(expires_at_ms, &e).first;
  }
  e.expires_at_ms = expires_at_ms;
}

PolicyEntry* ExpiryIndex::NextDue(int64_t now_ms) const {
  if (by_expiry_.empty() || now_ms < by_expiry_.begin()->first) return nullptr;
  return by_expiry_.begin()->second;
}

}  // namespace memkv::storage::policy
