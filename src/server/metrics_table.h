// The server's metrics and status fields, described once.
//
// ServerMetricTable(): one row per Prometheus family the admin endpoint
// serves at /metrics (name, type, labels, HELP, how to read it from a
// ServerSnapshot); docs/metrics.md's "Server" table lists the same families
// (server_metrics_test checks both ways). ServerStatusTable(): one row per
// field of the /v1/status JSON (its path and how to write it). The admin
// endpoint only takes a snapshot and iterates the tables.
//
// Adding a server metric: a cell in ServerMetrics (metrics.h) or a field of a
// store's stats, the increment where it happens, one row in
// ServerMetricTable(), and its line in docs/metrics.md.
//
// Thread-safety: the tables are immutable; a snapshot is read on the thread
// that took it (the admin thread).
#ifndef MEMKV_SERVER_METRICS_TABLE_H_
#define MEMKV_SERVER_METRICS_TABLE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/json.h"
#include "drive/extent_store.h"
#include "events/publisher.h"
#include "metrics/table.h"
#include "server/admin.h"
#include "server/fleet.h"
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
  const FleetState* fleet = nullptr;        // live; null: no identity (status leaves the fleet fields out)
};

using ServerMetric = metrics::MetricDescriptor<ServerSnapshot>;
std::span<const ServerMetric> ServerMetricTable();

// One field of /v1/status: `path` is "key" at the top level or
// "section.key" inside that section's object (sections are contiguous in the
// table); rows whose `present` says no are left out.
struct StatusField {
  std::string_view path;
  void (*write)(const ServerSnapshot& s, JsonWriter& w);
  bool (*present)(const ServerSnapshot& s) = nullptr;  // nullptr: always
};
std::span<const StatusField> ServerStatusTable();

// The /v1/health object (also /v1/status's "health").
void WriteHealthJson(JsonWriter& w, const HealthReport& health);

// The /metrics text and the /v1/status JSON of a snapshot.
std::string ServerMetricsText(const ServerSnapshot& snapshot);
std::string ServerStatusJson(const ServerSnapshot& snapshot);

}  // namespace memkv::server

#endif  // MEMKV_SERVER_METRICS_TABLE_H_
