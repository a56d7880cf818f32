// The server's metrics and status fields, described once.
//
// ServerFactTable(): one row per fact the server reports (metrics/facts.h):
// a Prometheus family of /metrics (name, type, labels, HELP, how to read it
// from a ServerSnapshot), the /v1/status fields it also appears as, or a
// status field alone. /metrics and /v1/status are both generated from it;
// docs/metrics.md's "Server" table lists the same families (server_metrics_test
// checks both ways). The admin endpoint only takes a snapshot.
//
// Adding a server metric: a cell in ServerMetrics (metrics.h) or a field of a
// store's stats, the increment where it happens, one row in the table
// (metrics_table.cc; `.Status("section.key", "label values")` when
// /v1/status shows it too), and its line in docs/metrics.md.
//
// Thread-safety: the tables are immutable; a snapshot is read on the thread
// that took it (the admin thread).
#ifndef MEMKV_SERVER_METRICS_TABLE_H_
#define MEMKV_SERVER_METRICS_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/json.h"
#include "drive/extent_store.h"
#include "events/publisher.h"
#include "metrics/facts.h"
#include "metrics/table.h"
#include "server/admin.h"
#include "server/fleet.h"
#include "server/identities.h"
#include "server/metrics.h"
#include "server/namespace_stats.h"
#include "server/tenant_stats.h"
#include "storage/memory_store.h"
#include "tier/tiered_store.h"

namespace memkv::server {

// One tenant's row: its request counts and, while it is configured, what
// the store holds of it and its quotas (docs/tenants.md, "Metrics").
struct TenantRow {
  TenantCountsRow requests;     // name, lookups, hits, ...
  bool configured = false;      // in the current config (a removed tenant keeps its counts)
  TenantUsage usage;            // zeros when not configured
  uint64_t dram_quota_bytes = 0;   // 0: none
  uint64_t drive_quota_bytes = 0;  // 0: none
  const std::string& name() const { return requests.name; }
};

// Joins the request counters (every tenant ever seen) with the store's usage
// rows (`usage[i]` is `map[i]`'s) by name; tenants only in the map come
// after, with zero requests.
std::vector<TenantRow> JoinTenantRows(std::vector<TenantCountsRow> requests, const TenantMap& map,
                                      const std::vector<TenantUsage>& usage);

// Everything one scrape or status read reports, each source read once.
struct ServerSnapshot {
  const ServerMetrics* metrics = nullptr;   // live cells, read by the rows
  storage::MemoryStoreStats memory;
  tier::TierCounters tier;
  std::optional<drive::ExtentStoreStats> drives;   // file and direct modes only
  std::optional<events::PublisherCounters> events; // events.publish set only
  HealthReport health;
  http::HttpServerStats admin_http;         // the admin endpoint's own connections
  std::string_view version;
  std::string_view address;                 // the data listener, HOST:PORT
  std::string_view storage_mode;            // "memory", "file", "direct"
  double uptime_seconds = 0;
  bool rdma_active = false;
  std::string rdma_path;                    // RdmaEndpoint::Describe(), when active
  uint64_t requests_total = 0;
  double ops_per_second = 0;
  std::vector<NamespaceRow> namespaces;     // the reported namespaces, then "other"
  std::vector<TenantRow> tenants;           // every tenant seen or configured; empty without tenants
  std::vector<Identities::Row> identities;  // every (tenant, identity) row; counters live
  std::map<std::string, CacheIdentity> identity_info;  // every identity filed, by tag
  const FleetState* fleet = nullptr;        // live; null: no identity (status leaves the fleet fields out)
};

// The one table.
using ServerFact = metrics::Fact<ServerSnapshot>;
std::span<const ServerFact> ServerFactTable();

// Its Prometheus families, in table order: what /metrics writes.
using ServerMetric = metrics::MetricDescriptor<ServerSnapshot>;
std::span<const ServerMetric> ServerMetricTable();

// Its /v1/status fields in the order the document has them: `path` is
// "key" at the top level or "section.key" inside that section's object
// (sections are contiguous); fields whose row says so are left out.
using StatusField = metrics::StatusField<ServerSnapshot>;
std::span<const StatusField> ServerStatusTable();

// The /v1/health object (also /v1/status's "health").
void WriteHealthJson(JsonWriter& w, const HealthReport& health);

// The /metrics text and the /v1/status JSON of a snapshot.
std::string ServerMetricsText(const ServerSnapshot& snapshot);
std::string ServerStatusJson(const ServerSnapshot& snapshot);

}  // namespace memkv::server

#endif  // MEMKV_SERVER_METRICS_TABLE_H_
