// Identities: the cache identities a server serves (memkv/identity.h;
// docs/client-library.md, "Cache identity") and what each does, per tenant.
//
// A connection that sends Identify is checked against identities.accept,
// its identity filed under its tag, and from then on its keys are stored
// as <tenant prefix>@<tag>/<key> (KeyScope): two identities never name each
// other's blocks. Each (tenant, identity) pair has one row of relaxed
// atomic counters and two latency histograms, found once at Identify and
// held by the connection, so counting takes no lock. Rows are never freed
// (every series stays monotonic). At most identities.max pairs have rows of
// their own; the rest of a tenant's identities share its "other" row.
// Connections that send no identity count under "none".
//
// Thread-safety: every method may be called from any thread.
#ifndef MEMKV_SERVER_IDENTITIES_H_
#define MEMKV_SERVER_IDENTITIES_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/identity_selector.h"
#include "base/mutex.h"
#include "base/tenant_map.h"
#include "memkv/identity.h"
#include "metrics/histogram.h"
#include "storage/store_event.h"

namespace memkv::server {

// The removals memkv_identity_evictions_total counts, by their reason
// label (storage::RemovalReasonName): deletes and replacements are not.
inline constexpr std::array<storage::RemovalReason, 3> kCountedRemovals = {
    storage::RemovalReason::kEvicted, storage::RemovalReason::kExpired, storage::RemovalReason::kChecksum};

struct IdentityCounters {
  std::atomic<uint64_t> lookups{0};          // blocks asked for (gets, exists, prefix-match keys)
  std::atomic<uint64_t> found{0};            // of those, found
  std::atomic<uint64_t> fetched{0};          // blocks whose bytes were served
  std::atomic<uint64_t> fetched_bytes{0};
  std::atomic<uint64_t> fetched_in_time{0};  // reported by clients: restores the engine used
  std::atomic<uint64_t> fetched_late{0};     // reported by clients: restores that came too late
  std::atomic<uint64_t> stores{0};           // values stored
  std::atomic<uint64_t> stored_bytes{0};
  std::atomic<uint64_t> stores_shed{0};      // reported by clients: stores they dropped
  // Values that left the store, by tier (0 dram, 1 drive) and reason.
  std::array<std::array<std::atomic<uint64_t>, kCountedRemovals.size()>, 2> evictions{};
  metrics::Histogram load = metrics::Histogram::ForLatencyNanos();   // gets
  metrics::Histogram store = metrics::Histogram::ForLatencyNanos();  // puts

  void CountLookups(uint64_t lookups, uint64_t found, uint64_t fetched, uint64_t bytes);
  void CountStored(uint64_t stores, uint64_t bytes);
};

struct IdentitiesOptions {
  std::vector<IdentitySelector> accept;  // empty: every identity
  bool require = false;
  uint32_t max = 64;
};

class Identities {
 public:
  static constexpr std::string_view kNone = "none";
  static constexpr std::string_view kOther = "other";

  // The tenants' prefixes find a stored key's tenant (CountRemoval).
  Identities(IdentitiesOptions options, TenantMap tenants);

  bool require() const { return options_.require; }

  // Checks `identity` against identities.accept (PermissionDenied naming
  // the tag and the list when no entry matches), files it under `tag`, and
  // returns the row of (tenant, tag). `tenant` is "" for an administrator.
  Result<IdentityCounters*> Admit(std::string_view tenant, const CacheIdentity& identity, const std::string& tag);
  // The row of a tenant's connections that sent no identity.
  IdentityCounters* Unidentified(std::string_view tenant);

  // A value left the store (an eviction, an expiry, a failed checksum):
  // counted for the tenant and identity its stored key names.
  void CountRemoval(const storage::StoreEvent& event);

  struct Row {
    std::string tenant;
    std::string identity;  // a tag, "none" or "other"
    const IdentityCounters* counters;
  };
  // Every row, in creation order.
  std::vector<Row> Snapshot() const;
  // Every identity filed, by tag.
  std::map<std::string, CacheIdentity> Known() const;

  // The tag a stored key names after its tenant's prefix ("@<tag>/"), or "".
  static std::string_view TagOf(std::string_view key_after_prefix);

 private:
  IdentityCounters* RowLocked(std::string_view tenant, std::string_view identity) MEMKV_REQUIRES(mu_);
  IdentityCounters* FindLocked(std::string_view tenant, std::string_view identity) const MEMKV_REQUIRES(mu_);

  const IdentitiesOptions options_;
  const TenantMap tenants_;
  mutable Mutex mu_;
  std::deque<std::pair<std::pair<std::string, std::string>, IdentityCounters>> rows_ MEMKV_GUARDED_BY(mu_);
  // By "<tenant>\n<identity>".
  std::map<std::string, IdentityCounters*, std::less<>> by_name_ MEMKV_GUARDED_BY(mu_);
  std::map<std::string, CacheIdentity> known_ MEMKV_GUARDED_BY(mu_);
  uint32_t own_rows_ MEMKV_GUARDED_BY(mu_) = 0;  // rows of a tag (not none, not other)
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_IDENTITIES_H_
