// RetentionPolicy: the retention classes of PutOptions (normal, evict_first,
// pinned). A pinned value is never evicted while its TTL runs; the TTL of a
// pin is defaulted (pin_ttl) and clamped (pin_ttl_max), and each hit
// re-arms it where the tier says so; all pinned values together stay within
// a cap (pinned_max_fraction of the tier's capacity), so pins cannot starve
// the cache. Which queue an evict_first or normal value waits in is the
// eviction order's (eviction/eviction_order.h).
//
// Owned by Policies; every call under the owning tier's lock, except the
// relaxed mirrors pinned_bytes() and pinned_values(), readable any time.
#ifndef MEMKV_STORAGE_POLICY_RETENTION_RETENTION_POLICY_H_
#define MEMKV_STORAGE_POLICY_RETENTION_RETENTION_POLICY_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "memkv/put_options.h"
#include "memkv/status.h"
#include "storage/policy/policy.h"
#include "storage/policy/ttl/expiry_index.h"

namespace memkv::storage::policy {

struct RetentionOptions {
  // memory.pinned_max_fraction: the most of the capacity pinned values may
  // take together, in (0, 1].
  double pinned_max_fraction = 1.0;
  uint64_t pin_ttl_ms = 30ULL * 60 * 1000;           // memory.pin_ttl: a pin put without a TTL
  uint64_t pin_ttl_max_ms = 24ULL * 60 * 60 * 1000;  // memory.pin_ttl_max: longer pin TTLs are cut to this
  // Each hit and prefix match starts a pin's TTL again (the DRAM pool). The
  // drives keep the expiry a value was written with.
  bool rearm_on_hit = true;
};

// InvalidArgument, prefixed with `who`, unless 0 < fraction <= 1 and
// 0 < pin_ttl_ms <= pin_ttl_max_ms.
Status CheckRetentionOptions(const RetentionOptions& options, std::string_view who);

// The TTL a value put with `put` keeps: a pin's defaulted and clamped;
// others' as given (0: none).
uint64_t AppliedTtlMs(const RetentionOptions& options, const PutOptions& put);

class RetentionPolicy final : public Policy {
 public:
  // `capacity_units`: the tier's capacity in the unit of PolicyEntry::cost,
  // which is `unit_bytes` bytes. `ttl`: where a re-armed pin's expiry goes.
  RetentionPolicy(const RetentionOptions& options, uint64_t capacity_units, uint64_t unit_bytes, ExpiryIndex* ttl);

  void OnLink(PolicyEntry& e) override;
  void OnUnlink(PolicyEntry& e, Removal why) override;
  void OnTouch(PolicyEntry& e, int64_t now_ms) override;
  void OnReaders(PolicyEntry& e, bool held) override;

  uint64_t AppliedTtlMs(const PutOptions& put) const { return policy::AppliedTtlMs(options_, put); }
  // A prefix match: a pin's TTL starts again, as on a hit.
  void Rearm(PolicyEntry& e, int64_t now_ms);
  // Ok when pinning `units` more, less `replaced_units` of pinned value the
  // put replaces, stays within the cap; else ResourceExhausted, its message
  // opening with `what` (the call and key) and naming the setting.
  Status PinRoom(std::string_view what, uint64_t units, uint64_t replaced_units) const;

  uint64_t cap_units() const { return cap_units_; }
  uint64_t retained_units() const { return retained_units_; }
  // Of those, held by no reader: what eviction cannot take although no reader holds it.
  uint64_t idle_units() const { return idle_units_; }
  uint64_t pinned_bytes() const { return pinned_bytes_.load(std::memory_order_relaxed); }
  uint64_t pinned_values() const { return pinned_values_.load(std::memory_order_relaxed); }

 private:
  const RetentionOptions options_;
  const uint64_t capacity_units_;
  const uint64_t unit_bytes_;
  const uint64_t cap_units_;
  ExpiryIndex* const ttl_;
  uint64_t retained_units_ = 0;  // linked pinned entries
  uint64_t idle_units_ = 0;      // of those, with no reader pin
  std::atomic<uint64_t> pinned_bytes_{0};
  std::atomic<uint64_t> pinned_values_{0};
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_RETENTION_RETENTION_POLICY_H_
