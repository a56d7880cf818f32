// ExpiryIndex: the TTL policy. Linked entries with an expiry, soonest first,
// so that finding what has expired costs O(log n) per value and nothing when
// none has; lookups free expired values lazily, and a periodic sweep (the
// tiers' SweepExpired) takes the soonest expired in order.
//
// Owned by Policies; every call under the owning tier's lock.
#ifndef MEMKV_STORAGE_POLICY_TTL_EXPIRY_INDEX_H_
#define MEMKV_STORAGE_POLICY_TTL_EXPIRY_INDEX_H_

#include <cstdint>

#include "storage/policy/policy.h"

namespace memkv::storage::policy {

// The instant `ttl_ms` after `now_ms` (0 for no TTL), saturating at INT64_MAX.
int64_t ExpiryAfter(int64_t now_ms, uint64_t ttl_ms);

class ExpiryIndex final : public Policy {
 public:
  ExpiryIndex() = default;

  void OnLink(PolicyEntry& e) override;
  void OnUnlink(PolicyEntry& e, Removal why) override;

  // Moves a linked entry's expiry (0: never). Re-keys its node in place
  // when it had one and keeps one: no allocation.
  void SetExpiry(PolicyEntry& e, int64_t expires_at_ms);
  // The soonest expired entry at `now_ms`, or null.
  PolicyEntry* NextDue(int64_t now_ms) const;
  // Calls f(entry) for the expired entries, soonest first, while it returns
  // true; f must not unlink (collect, then unlink).
  template <class F>
  void ForEachDue(int64_t now_ms, F&& f) const {
    for (const auto& [at, e] : by_expiry_) {
      if (now_ms < at || !f(*e)) return;
    }
  }
  bool empty() const { return by_expiry_.empty(); }
  size_t size() const { return by_expiry_.size(); }

 private:
  ExpiryQueue by_expiry_;
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_TTL_EXPIRY_INDEX_H_
