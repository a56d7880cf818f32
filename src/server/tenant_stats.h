// TenantStats: request counts per tenant (docs/tenants.md, "Metrics"), beside
// what the store counts per tenant (TieredStore::TenantUsages: bytes, keys,
// evictions, quota refusals).
//
// Each configured tenant has one slot of relaxed atomic counters, found by
// name once at Connect and held by the connection, so counting a request
// takes no lock. Slots are never freed: a tenant removed by a reload keeps
// its slot (and a tenant added back gets it again), so every series stays
// monotonic. The administrator (network.auth_key) is not a tenant and is
// not counted here.
//
// Thread-safety: every method may be called from any thread.
#ifndef MEMKV_SERVER_TENANT_STATS_H_
#define MEMKV_SERVER_TENANT_STATS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace memkv::server {

struct TenantCounters {
  std::atomic<uint64_t> lookups{0};        // blocks asked for (gets, exists, prefix-match keys)
  std::atomic<uint64_t> hits{0};           // of those, found
  std::atomic<uint64_t> read_bytes{0};     // value bytes served
  std::atomic<uint64_t> puts{0};           // values stored
  std::atomic<uint64_t> written_bytes{0};  // value bytes stored
  std::atomic<uint64_t> read_only_refusals{0};  // writes refused: the tenant is read-only
  std::atomic<uint64_t> connections{0};    // connections authenticated with its keys, ever
  std::atomic<uint64_t> open_connections{0};     // of those, open now
  std::atomic<uint64_t> connections_refused{0};  // Connects refused: tenants[].max_connections open
};

struct TenantCountsRow {
  std::string name;
  uint64_t lookups = 0;
  uint64_t hits = 0;
  uint64_t read_bytes = 0;
  uint64_t puts = 0;
  uint64_t written_bytes = 0;
  uint64_t read_only_refusals = 0;
  uint64_t connections = 0;
  uint64_t open_connections = 0;
  uint64_t connections_refused = 0;
  uint64_t misses() const { return lookups > hits ? lookups - hits : 0; }
};

class TenantStats {
 public:
  // The slot of tenant `name`, created on first use; stable for the life of
  // the TenantStats.
  TenantCounters* Slot(std::string_view name);
  // Every slot ever created, in creation order.
  std::vector<TenantCountsRow> Snapshot() const;

 private:
  mutable Mutex mu_;
  // The deque; the counters in it are atomics.
  std::deque<std::pair<std::string, TenantCounters>> slots_ MEMKV_GUARDED_BY(mu_);
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_TENANT_STATS_H_
