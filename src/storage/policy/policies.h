// Policies: the storage policy kit, composed for one tier. A tier (the DRAM
// pool, storage::MemoryStore; the drives, drive::ExtentStore) does placement
// and I/O; it owns one Policies, tells it what happens to its values, and
// asks it the policy questions: which value to evict next, what has expired,
// how long a pin lives and whether it fits the pin cap, whether a tenant's
// put fits its quota and which of its values make room.
//
//   on a put:    set the entry's PolicyEntry fields, then OnLink
//   on a hit:    OnTouch (LRU, evict queues, tenant LRU, a pin's TTL)
//   on removal:  OnUnlink (deleted, replaced, evicted, expired)
//   readers:     PinReader / UnpinReader around a read of the bytes
//
// The policies, one folder each under src/storage/policy/:
//   ttl/        ExpiryIndex: expiry order, lazy expiry and the sweep
//   retention/  RetentionPolicy: classes, pin TTL default and clamp, pin cap
//   eviction/   EvictionOrder: LRU, prefix-aware leaves first, the passes
//   quota/      TenantQuotas: per-tenant usage, victims and refusals
// Adding a policy: a folder with the Policy (policy.h) and its test, a
// member below and one line in Policies::Policies's list (policies.cc), and
// a hook field in PolicyEntry if it keeps per-value state.
//
// Threads: every call under the owning tier's lock (MEMKV_REQUIRES on the
// tier's *Locked functions). Not copyable or movable: entries point into it.
#ifndef MEMKV_STORAGE_POLICY_POLICIES_H_
#define MEMKV_STORAGE_POLICY_POLICIES_H_

#include <cstdint>
#include <vector>

#include "storage/policy/eviction/eviction_order.h"
#include "storage/policy/policy.h"
#include "storage/policy/policy_entry.h"
#include "storage/policy/quota/tenant_quotas.h"
#include "storage/policy/retention/retention_policy.h"
#include "storage/policy/ttl/expiry_index.h"

namespace memkv::storage::policy {

struct PolicyOptions {
  // The DRAM pool's prefix-aware order (EvictionOrder::EvictInOrder); the
  // drives keep the LRU list only.
  bool prefix_aware = false;
  EvictionOrder::FindLinked find_linked;  // with prefix_aware
  RetentionOptions retention;
  uint64_t capacity_units = 0;  // the tier's capacity, in PolicyEntry::cost units
  uint64_t unit_bytes = 1;      // bytes per cost unit
  QuotaKind quota = QuotaKind::kDram;
};

class Policies {
 public:
  explicit Policies(PolicyOptions options);
  Policies(const Policies&) = delete;
  Policies& operator=(const Policies&) = delete;

  void OnLink(PolicyEntry& e) {
    for (Policy* p : all_) p->OnLink(e);
  }
  void OnUnlink(PolicyEntry& e, Removal why) {
    for (Policy* p : all_) p->OnUnlink(e, why);
  }
  void OnTouch(PolicyEntry& e, int64_t now_ms) {
    for (Policy* p : all_) p->OnTouch(e, now_ms);
  }
  // A reader takes `e` (linked: still in the index); the first one tells the policies.
  void PinReader(PolicyEntry& e, bool linked) {
    if (e.pins++ == 0 && linked) {
      for (Policy* p : all_) p->OnReaders(e, true);
    }
  }
  // A reader lets go; true when it was the last.
  bool UnpinReader(PolicyEntry& e, bool linked) {
    if (--e.pins > 0) return false;
    if (linked) {
      for (Policy* p : all_) p->OnReaders(e, false);
    }
    return true;
  }

  // Cost units that evicting every evictable value would free (neither
  // held by readers nor retention-pinned).
  uint64_t EvictableCost() const {
    return eviction_.linked_cost() - eviction_.reader_held_cost() - retention_.idle_units();
  }

  ExpiryIndex& ttl() { return ttl_; }
  const ExpiryIndex& ttl() const { return ttl_; }
  RetentionPolicy& retention() { return retention_; }
  const RetentionPolicy& retention() const { return retention_; }
  EvictionOrder& eviction() { return eviction_; }
  const EvictionOrder& eviction() const { return eviction_; }
  TenantQuotas& quota() { return quota_; }
  const TenantQuotas& quota() const { return quota_; }

 private:
  ExpiryIndex ttl_;
  RetentionPolicy retention_;
  EvictionOrder eviction_;
  TenantQuotas quota_;
  // Every policy, in the order they hear of a change.
  std::vector<Policy*> all_;
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_POLICIES_H_
