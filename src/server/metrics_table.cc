#include "server/metrics_table.h"
#include "server/admin_auth.h"


namespace memkv::server {
namespace {

using metrics::Labels;
using metrics::MetricType;
using metrics::Samples;
using drive::DriveState;
using drive::DriveStateName;
using drive::DriveStats;
using S = ServerSnapshot;

constexpr MetricType kCounter = MetricType::kCounter;
constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kHistogram = MetricType::kHistogram;

// The `op` and `transport` labels of one OpSlot.
Labels OpLabels(size_t i) {
  const OpSlot slot = static_cast<OpSlot>(i);
  return {{"op", OpSlotName(slot)}, {"transport", OpSlotTransport(slot)}};
}

// The reader of a row with one unlabelled sample: a ServerMetrics counter.
template <metrics::Counter ServerMetrics::*Cell>
void ReadCell(const S& s, Samples& out) {
  out.Counter({}, ((*s.metrics).*Cell).Value());
}

// The reader of a per-namespace counter row: one sample per reported
// namespace, then "other".
template <uint64_t NamespaceCounts::*Field>
void ReadNamespaces(const S& s, Samples& out) {
  for (const NamespaceRow& row : s.namespaces) out.Counter({{"namespace", row.name}}, row.counts.*Field);
}

// The reader of a per-tenant request counter row.
template <uint64_t TenantCountsRow::*Field>
void ReadTenantRequests(const S& s, Samples& out) {
  for (const TenantRow& row : s.tenants) out.Counter({{"tenant", row.name()}}, row.requests.*Field);
}

// The reader of a per-tenant usage counter row (configured tenants only).
template <uint64_t TenantUsage::*Field>
void ReadTenantUsage(const S& s, Samples& out) {
  for (const TenantRow& row : s.tenants) {
    if (row.configured) out.Counter({{"tenant", row.name()}}, row.usage.*Field);
  }
}

// The reader of a per-tenant, per-tier gauge: `dram` then `drive` (drive
// only where the server has drives).
template <uint64_t TenantUsage::*Dram, uint64_t TenantUsage::*Drive>
void ReadTenantTiers(const S& s, Samples& out) {
  for (const TenantRow& row : s.tenants) {
    if (!row.configured) continue;
    out.Gauge({{"tenant", row.name()}, {"tier", "dram"}}, double(row.usage.*Dram));
    if (s.drives) out.Gauge({{"tenant", row.name()}, {"tier", "drive"}}, double(row.usage.*Drive));
  }
}

std::string DeviceName(const DriveStats& d) { return "drive" + std::to_string(d.index); }

const std::vector<DriveStats>& Drives(const S& s) {
  static const std::vector<DriveStats> kNone;
  return s.drives ? s.drives->drives : kNone;
}

// ---- /metrics ----
//
// Families in the order the exposition lists them; each reader emits its
// samples in label order (ops in OpSlot order, dram before the drives).
constexpr ServerMetric kMetrics[] = {
    {"memkv_build_info", kGauge, "version", "The running binary's version.",
     [](const S& s, Samples& out) { out.Gauge({{"version", s.version}}, 1); }},
    {"memkv_uptime_seconds", kGauge, "", "Seconds since the server started.",
     [](const S& s, Samples& out) { out.Gauge({}, s.uptime_seconds); }},
    {"memkv_health", kGauge, "status", "1 for the current health status (/v1/health), 0 for the others.",
     [](const S& s, Samples& out) {
       for (const char* status : {"healthy", "degraded", "unhealthy"}) {
         out.Gauge({{"status", status}}, s.health.status == status ? 1 : 0);
       }
     }},
    // Fleet (docs/fleet.md).
    {"memkv_server_info", kGauge, "server_id", "This server's id (docs/fleet.md, \"Server identity\").",
     [](const S& s, Samples& out) {
       if (s.fleet != nullptr) out.Gauge({{"server_id", s.fleet->id()}}, 1);
     }},
    {"memkv_draining", kGauge, "", "1 while the server is draining (takes no new keys), else 0.",
     [](const S& s, Samples& out) { out.Gauge({}, s.fleet != nullptr && s.fleet->draining() ? 1 : 0); }},
    {"memkv_put_queue_bytes", kGauge, "",
     "Bytes of puts accepted and waiting for the drives (Busy at storage.busy_queue_size).",
     [](const S& s, Samples& out) { out.Gauge({}, s.fleet != nullptr ? double(s.fleet->queued_bytes()) : 0); }},
    {"memkv_requests_shed_total", kCounter, "reason", "Puts refused without storing: draining, or busy.",
     [](const S& s, Samples& out) {
       out.Counter({{"reason", "draining"}}, s.fleet != nullptr ? s.fleet->shed_draining() : 0);
       out.Counter({{"reason", "busy"}}, s.fleet != nullptr ? s.fleet->shed_busy() : 0);
     }},

    // Per operation.
    {"memkv_requests_total", kCounter, "op,transport", "Requests answered, by operation and transport.",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) out.Counter(OpLabels(i), s.metrics->ops[i].requests.Value());
     }},
    {"memkv_request_errors_total", kCounter, "op,transport",
     "Requests answered with an error (a status other than ok or not found).",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) out.Counter(OpLabels(i), s.metrics->ops[i].errors.Value());
     }},
    {"memkv_value_bytes_total", kCounter, "op,transport", "Value bytes stored (puts) or served (gets).",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) out.Counter(OpLabels(i), s.metrics->ops[i].value_bytes.Value());
     }},
    {"memkv_request_duration_seconds", kHistogram, "op,transport",
     "From a request's header arriving to its response being queued, drive work included.",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) {
         out.Histogram(OpLabels(i), s.metrics->ops[i].latency.Snapshot(), metrics::kNanosPerSecond);
       }
     }},

    // Connections and the network.
    {"memkv_connections_active", kGauge, "", "Client connections open now.",
     [](const S& s, Samples& out) {
       out.Gauge({}, double(s.metrics->connections_active.load(std::memory_order_relaxed)));
     }},
    {"memkv_connections_accepted_total", kCounter, "", "Client connections accepted.",
     ReadCell<&ServerMetrics::connections_accepted>},
    {"memkv_accept_failures_total", kCounter, "",
     "accept(2) failures for lack of descriptors or memory; each pauses accepts for 100 ms.",
     ReadCell<&ServerMetrics::accept_failures>},
    {"memkv_connections_closed_total", kCounter, "reason", "Connections the server closed, by reason.",
     [](const S& s, Samples& out) {
       const ServerMetrics& m = *s.metrics;
       out.Counter({{"reason", "handshake_timeout"}}, m.connections_closed_idle.Value());
       out.Counter({{"reason", "write_stall"}}, m.connections_closed_stalled.Value());
       out.Counter({{"reason", "frame_timeout"}}, m.connections_closed_frame_timeout.Value());
       out.Counter({{"reason", "rdma_lease"}}, m.rdma_leases_expired.Value());
     }},
    {"memkv_connections_refused_total", kCounter, "reason",
     "Connections closed at once on accept because a connection limit was reached, by limit "
     "(network.max_connections, network.max_unauthenticated_connections).",
     [](const S& s, Samples& out) {
       out.Counter({{"reason", "max_connections"}}, s.metrics->connections_refused_max_connections.Value());
       out.Counter({{"reason", "max_unauthenticated"}}, s.metrics->connections_refused_max_unauthenticated.Value());
     }},
    {"memkv_connections_shed_total", kCounter, "",
     "Unauthenticated connections closed, oldest first, to admit a newer one while "
     "network.max_unauthenticated_connections was reached.",
     ReadCell<&ServerMetrics::connections_shed>},
    {"memkv_admin_auth_failures_total", kCounter, "reason",
     "State-changing admin requests refused for failed authentication, by reason.",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < s.metrics->admin_auth_failures.size(); ++i) {
         out.Counter({{"reason", std::string(AdminAuthFailureName(static_cast<AdminAuthFailure>(i)))}},
                     s.metrics->admin_auth_failures[i].Value());
       }
     }},
    {"memkv_admin_connections_shed_total", kCounter, "",
     "Admin connections without a complete request closed, oldest first, to admit a newer one while "
     "the admin endpoint's 64 connections were open.",
     [](const S& s, Samples& out) { out.Counter({}, s.admin_http.shed); }},
    {"memkv_admin_connections_refused_total", kCounter, "",
     "Admin connections answered 503 or closed at once because all 64 were writing responses.",
     [](const S& s, Samples& out) { out.Counter({}, s.admin_http.rejected_busy); }},
    {"memkv_auth_failures_total", kCounter, "", "Frames or connections refused for failed authentication.",
     ReadCell<&ServerMetrics::auth_failures>},
    {"memkv_protocol_errors_total", kCounter, "", "Malformed frames, unknown opcodes and similar protocol errors.",
     ReadCell<&ServerMetrics::protocol_errors>},
    {"memkv_unsupported_version_total", kCounter, "", "Frames of a protocol version this server does not speak.",
     ReadCell<&ServerMetrics::unsupported_version>},
    {"memkv_network_received_bytes_total", kCounter, "", "Bytes read from client sockets.",
     ReadCell<&ServerMetrics::bytes_received>},
    {"memkv_network_sent_bytes_total", kCounter, "", "Bytes written to client sockets.",
     ReadCell<&ServerMetrics::bytes_sent>},

    // Data integrity.
    {"memkv_checksum_failures_total", kCounter, "where",
     "Values or payloads whose bytes did not match their checksum, by where it was caught.",
     [](const S& s, Samples& out) {
       out.Counter({{"where", "payload"}}, s.metrics->payload_checksum_failures.Value());
       out.Counter({{"where", "rdma_commit"}}, s.metrics->rdma_commit_checksum_failures.Value());
       out.Counter({{"where", "dram"}}, s.memory.checksum_failures);
       if (s.drives) out.Counter({{"where", "drive"}}, s.drives->checksum_failures);
     }},
    {"memkv_decrypt_failures_total", kCounter, "",
     "Encrypted values read from the drives that failed their authentication tag (each a miss, the value dropped).",
     [](const S& s, Samples& out) { if (s.drives) out.Counter({}, s.drives->decrypt_failures); }},
    {"memkv_sent_value_checks_total", kCounter, "result",
     "DRAM values sent to a TCP reader (which checks them end to end) and then checked by the server: "
     "hashed, or skipped because the bytes had matched within memory.read_check_interval_ms.",
     [](const S& s, Samples& out) {
       out.Counter({{"result", "hashed"}}, s.memory.later_checks);
       out.Counter({{"result", "skipped_recent"}}, s.memory.later_checks_skipped);
     }},

    // The cache: DRAM hits, drive hits (DRAM misses served by a drive), misses.
    {"memkv_cache_hits_total", kCounter, "tier", "Gets served, by the tier that held the value.",
     [](const S& s, Samples& out) {
       out.Counter({{"tier", "dram"}}, s.memory.hits);
       out.Counter({{"tier", "drive"}}, s.tier.drive_hits);
     }},
    {"memkv_cache_misses_total", kCounter, "", "Gets of values in no tier.",
     [](const S& s, Samples& out) {
       out.Counter({}, s.memory.misses >= s.tier.drive_hits ? s.memory.misses - s.tier.drive_hits : 0);
     }},
    {"memkv_evictions_total", kCounter, "tier", "Values evicted to make room, by tier.",
     [](const S& s, Samples& out) {
       out.Counter({{"tier", "dram"}}, s.memory.evictions);
       out.Counter({{"tier", "drive"}}, s.tier.drive_evictions);
     }},
    {"memkv_expired_total", kCounter, "tier", "Values freed because their TTL ran out, by tier.",
     [](const S& s, Samples& out) {
       out.Counter({{"tier", "dram"}}, s.memory.expired);
       if (s.drives) out.Counter({{"tier", "drive"}}, s.drives->expired);
     }},
    {"memkv_pinned_bytes", kGauge, "", "DRAM pool room held by values of retention class pinned.",
     [](const S& s, Samples& out) { out.Gauge({}, double(s.memory.pinned_bytes)); }},
    {"memkv_pinned_cap_bytes", kGauge, "", "The most room pinned values may take (memory.pinned_max_fraction).",
     [](const S& s, Samples& out) { out.Gauge({}, double(s.memory.pinned_cap_bytes)); }},
    {"memkv_pin_refusals_total", kCounter, "", "Pinned puts refused because pinned values were at their cap.",
     [](const S& s, Samples& out) { out.Counter({}, s.memory.pin_refusals); }},
    {"memkv_promotions_total", kCounter, "", "Values read from a drive and copied back into DRAM.",
     [](const S& s, Samples& out) { out.Counter({}, s.tier.promotions); }},
    {"memkv_keys", kGauge, "tier", "Values held, by tier.",
     [](const S& s, Samples& out) {
       out.Gauge({{"tier", "dram"}}, double(s.memory.keys));
       if (s.drives) out.Gauge({{"tier", "drive"}}, double(s.drives->keys));
     }},

    // Capacity, per device (the DRAM pool, each drive).
    {"memkv_capacity_raw_bytes", kGauge, "device", "Raw size of each device (the DRAM pool, each drive).",
     [](const S& s, Samples& out) {
       out.Gauge({{"device", "dram"}}, double(s.memory.pool_bytes));
       for (const DriveStats& d : Drives(s)) out.Gauge({{"device", DeviceName(d)}}, double(d.raw_bytes));
     }},
    {"memkv_capacity_usable_bytes", kGauge, "device", "Bytes of each device that can hold values.",
     [](const S& s, Samples& out) {
       out.Gauge({{"device", "dram"}}, double(s.memory.pool_bytes));
       for (const DriveStats& d : Drives(s)) out.Gauge({{"device", DeviceName(d)}}, double(d.usable_bytes));
     }},
    {"memkv_capacity_used_bytes", kGauge, "device",
     "Bytes of each device's capacity consumed: values rounded up to the allocation unit, and room reserved "
     "by puts in flight.",
     [](const S& s, Samples& out) {
       out.Gauge({{"device", "dram"}}, double(s.memory.used_bytes));
       for (const DriveStats& d : Drives(s)) out.Gauge({{"device", DeviceName(d)}}, double(d.used_bytes));
     }},
    {"memkv_stored_value_bytes", kGauge, "tier", "Bytes of the values held, by tier.",
     [](const S& s, Samples& out) {
       out.Gauge({{"tier", "dram"}}, double(s.memory.value_bytes));
       if (s.drives) out.Gauge({{"tier", "drive"}}, double(s.drives->value_bytes));
     }},
    {"memkv_fragmentation_ratio", kGauge, "tier",
     "Share of the free bytes outside the longest free run (per drive for the drive tier), by tier: 0 when the "
     "free room is in one piece.",
     [](const S& s, Samples& out) {
       out.Gauge({{"tier", "dram"}}, s.memory.fragmentation());
       if (s.drives) out.Gauge({{"tier", "drive"}}, s.drives->fragmentation());
     }},

    // The drives (file and direct modes only: no samples in memory mode).
    {"memkv_drive_state", kGauge, "device,state", "1 for each drive's current state, 0 for the others.",
     [](const S& s, Samples& out) {
       for (const DriveStats& d : Drives(s)) {
         const std::string device = DeviceName(d);
         for (DriveState state : {DriveState::kOnline, DriveState::kFull, DriveState::kOffline}) {
           out.Gauge({{"device", device}, {"state", DriveStateName(state)}}, d.state == state ? 1 : 0);
         }
       }
     }},
    {"memkv_drive_io_errors_total", kCounter, "", "Drive reads, writes and syncs that failed.",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.drives->io_errors);
     }},
    {"memkv_drive_write_failures_total", kCounter, "", "Puts the drives refused (full, offline, I/O error).",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.tier.write_failures);
     }},
    {"memkv_drive_journal_commits_total", kCounter, "", "Journal writes (each may carry several operations).",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.drives->journal_commits);
     }},

    // RDMA.
    {"memkv_rdma_active", kGauge, "", "1 when the server accepts RDMA (a device is configured and up).",
     [](const S& s, Samples& out) { out.Gauge({}, s.rdma_active ? 1 : 0); }},
    {"memkv_rdma_connections_total", kCounter, "result", "RDMA offers at Connect, by result.",
     [](const S& s, Samples& out) {
       out.Counter({{"result", "accepted"}}, s.metrics->rdma_connections.Value());
       out.Counter({{"result", "refused"}}, s.metrics->rdma_refused.Value());
     }},
    {"memkv_rdma_bytes_total", kCounter, "direction", "Value bytes clients moved by RDMA, by direction.",
     [](const S& s, Samples& out) {
       out.Counter({{"direction", "put"}}, s.metrics->rdma_put_bytes.Value());
       out.Counter({{"direction", "get"}}, s.metrics->rdma_get_bytes.Value());
     }},

    // Namespaces (metrics.namespace_separator, metrics.namespace_top).
    {"memkv_namespace_lookups_total", kCounter, "namespace",
     "Blocks asked for (each key of a get, an exists or a prefix match), by key namespace.",
     ReadNamespaces<&NamespaceCounts::lookups>},
    {"memkv_namespace_hits_total", kCounter, "namespace",
     "Blocks asked for and found (a prefix match's matched keys), by key namespace.",
     ReadNamespaces<&NamespaceCounts::hits>},
    {"memkv_namespace_read_bytes_total", kCounter, "namespace", "Value bytes served, by key namespace.",
     ReadNamespaces<&NamespaceCounts::read_bytes>},
    {"memkv_namespace_puts_total", kCounter, "namespace", "Values stored, by key namespace.",
     ReadNamespaces<&NamespaceCounts::puts>},
    {"memkv_namespace_written_bytes_total", kCounter, "namespace", "Value bytes stored, by key namespace.",
     ReadNamespaces<&NamespaceCounts::written_bytes>},
    {"memkv_namespace_evictions_total", kCounter, "namespace",
     "Values evicted to make room (any tier), by key namespace.", ReadNamespaces<&NamespaceCounts::evictions>},

    // Tenants (docs/tenants.md): every tenant in the config, and any a
    // reload removed, which keeps its request counts.
    {"memkv_tenant_bytes", kGauge, "tenant,tier", "Value bytes a tenant holds, by tier.",
     ReadTenantTiers<&TenantUsage::dram_bytes, &TenantUsage::drive_bytes>},
    {"memkv_tenant_keys", kGauge, "tenant,tier", "Values a tenant holds, by tier.",
     ReadTenantTiers<&TenantUsage::dram_keys, &TenantUsage::drive_keys>},
    {"memkv_tenant_quota_bytes", kGauge, "tenant,tier", "A tenant's byte quota, by tier (tenants with one only).",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) {
         if (!row.configured) continue;
         if (row.dram_quota_bytes > 0) out.Gauge({{"tenant", row.name()}, {"tier", "dram"}}, double(row.dram_quota_bytes));
         if (s.drives && row.drive_quota_bytes > 0) {
           out.Gauge({{"tenant", row.name()}, {"tier", "drive"}}, double(row.drive_quota_bytes));
         }
       }
     }},
    {"memkv_tenant_lookups_total", kCounter, "tenant",
     "Blocks a tenant asked for (each key of a get, an exists or a prefix match).",
     ReadTenantRequests<&TenantCountsRow::lookups>},
    {"memkv_tenant_hits_total", kCounter, "tenant", "Blocks a tenant asked for and found.",
     ReadTenantRequests<&TenantCountsRow::hits>},
    {"memkv_tenant_misses_total", kCounter, "tenant", "Blocks a tenant asked for and did not find.",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) out.Counter({{"tenant", row.name()}}, row.requests.misses());
     }},
    {"memkv_tenant_read_bytes_total", kCounter, "tenant", "Value bytes served to a tenant.",
     ReadTenantRequests<&TenantCountsRow::read_bytes>},
    {"memkv_tenant_puts_total", kCounter, "tenant", "Values a tenant stored.", ReadTenantRequests<&TenantCountsRow::puts>},
    {"memkv_tenant_written_bytes_total", kCounter, "tenant", "Value bytes a tenant stored.",
     ReadTenantRequests<&TenantCountsRow::written_bytes>},
    {"memkv_tenant_evictions_total", kCounter, "tenant", "A tenant's values evicted (any tier, any cause).",
     ReadTenantUsage<&TenantUsage::evictions>},
    {"memkv_tenant_quota_evictions_total", kCounter, "tenant",
     "A tenant's values evicted to keep it within its own quota.", ReadTenantUsage<&TenantUsage::quota_evictions>},
    {"memkv_tenant_refusals_total", kCounter, "tenant,reason",
     "A tenant's requests refused: quota (what is left is pinned or being read), read_only.",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) {
         out.Counter({{"tenant", row.name()}, {"reason", "quota"}}, row.usage.quota_refusals);
         out.Counter({{"tenant", row.name()}, {"reason", "read_only"}}, row.requests.read_only_refusals);
       }
     }},
    {"memkv_tenant_connections_total", kCounter, "tenant", "Connections authenticated with a tenant's keys.",
     ReadTenantRequests<&TenantCountsRow::connections>},
    // Block events (events.publish set only: no samples otherwise).
    {"memkv_events_published_total", kCounter, "", "Block events sent to subscribers.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->events_published);
     }},
    {"memkv_events_batches_total", kCounter, "", "Event batches sent, each with its own sequence number.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->batches_published);
     }},
    {"memkv_events_dropped_total", kCounter, "", "Block events dropped because the publish queue was full.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->events_dropped);
     }},
    {"memkv_events_replay_requests_total", kCounter, "", "Replay requests served on the replay socket.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replay_requests);
     }},
    {"memkv_events_replay_misses_total", kCounter, "",
     "Replay requests for a sequence older than the replay buffer holds, or replays that fell behind it.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replay_misses);
     }},
    {"memkv_events_replay_bad_requests_total", kCounter, "",
     "Malformed replay requests, not answered (logged once per 10 s).",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replay_bad_requests);
     }},
    {"memkv_events_replays_cut_total", kCounter, "",
     "Replays ended early (the peer took nothing for 30 s, or too many replays at once); the end marker names "
     "the first batch not sent.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replays_cut);
     }},
    {"memkv_events_replays_active", kGauge, "", "Replays in progress, each paced by its peer.",
     [](const S& s, Samples& out) {
       if (s.events) out.Gauge({}, double(s.events->replays_active));
     }},
    {"memkv_events_replay_queued_bytes", kGauge, "",
     "Replay payload bytes queued in ZeroMQ and not yet written to the peers' sockets.",
     [](const S& s, Samples& out) {
       if (s.events) out.Gauge({}, double(s.events->replay_queued_bytes));
     }},
};

// ---- /v1/status ----

// Capacity in total: the drives when there are any (DRAM is their cache),
// else the DRAM pool.
struct Capacity {
  uint64_t raw = 0, usable = 0, used = 0;
};
Capacity TotalCapacity(const S& s) {
  if (!s.drives) return {s.memory.pool_bytes, s.memory.pool_bytes, s.memory.used_bytes};
  Capacity c;
  for (const DriveStats& d : s.drives->drives) {
    c.raw += d.raw_bytes;
    c.usable += d.usable_bytes;
    c.used += d.used_bytes;
  }
  return c;
}

// The DRAM pool, then each drive.
void WriteDevices(const S& s, JsonWriter& w) {
  w.BeginArray();
  w.BeginObject()
      .Key("name").String("dram")
      .Key("kind").String("memory")
      .Key("state").String("online")
      .Key("raw_bytes").Number(s.memory.pool_bytes)
      .Key("usable_bytes").Number(s.memory.pool_bytes)
      .Key("used_bytes").Number(s.memory.used_bytes)
      .EndObject();
  for (const DriveStats& d : Drives(s)) {
    w.BeginObject()
        .Key("name").String(DeviceName(d))
        .Key("kind").String(s.storage_mode)
        .Key("path").String(d.path)
        .Key("state").String(DriveStateName(d.state))
        .Key("reason").String(d.reason)
        .Key("raw_bytes").Number(d.raw_bytes)
        .Key("usable_bytes").Number(d.usable_bytes)
        .Key("used_bytes").Number(d.used_bytes)
        .Key("value_bytes").Number(d.value_bytes)
        .Key("free_bytes").Number(d.free_bytes)
        .Key("largest_free_bytes").Number(d.largest_free_bytes)
        .Key("fragmentation").Number(d.fragmentation())
        .Key("journal_used_bytes").Number(d.journal_used_bytes)
        .Key("journal_area_bytes").Number(d.journal_area_bytes)
        .EndObject();
  }
  w.EndArray();
}

bool HasDrives(const S& s) { return s.drives.has_value(); }
bool HasFleet(const S& s) { return s.fleet != nullptr; }

void WriteNamespaces(const S& s, JsonWriter& w) {
  w.BeginArray();
  for (const NamespaceRow& row : s.namespaces) {
    const NamespaceCounts& c = row.counts;
    w.BeginObject()
        .Key("name").String(row.name)
        .Key("lookups").Number(c.lookups)
        .Key("hits").Number(c.hits)
        .Key("hit_ratio").Number(c.hit_ratio())
        .Key("read_bytes").Number(c.read_bytes)
        .Key("puts").Number(c.puts)
        .Key("written_bytes").Number(c.written_bytes)
        .Key("evictions").Number(c.evictions)
        .EndObject();
  }
  w.EndArray();
}

void WriteTenants(const S& s, JsonWriter& w) {
  w.BeginArray();
  for (const TenantRow& row : s.tenants) {
    const TenantCountsRow& r = row.requests;
    const TenantUsage& u = row.usage;
    w.BeginObject()
        .Key("name").String(row.name())
        .Key("configured").Bool(row.configured)
        .Key("dram_bytes").Number(u.dram_bytes)
        .Key("dram_keys").Number(u.dram_keys)
        .Key("dram_quota_bytes").Number(row.dram_quota_bytes)
        .Key("drive_bytes").Number(u.drive_bytes)
        .Key("drive_keys").Number(u.drive_keys)
        .Key("drive_quota_bytes").Number(row.drive_quota_bytes)
        .Key("lookups").Number(r.lookups)
        .Key("hits").Number(r.hits)
        .Key("misses").Number(r.misses())
        .Key("hit_ratio").Number(r.lookups == 0 ? 0.0 : double(r.hits) / double(r.lookups))
        .Key("read_bytes").Number(r.read_bytes)
        .Key("puts").Number(r.puts)
        .Key("written_bytes").Number(r.written_bytes)
        .Key("evictions").Number(u.evictions)
        .Key("quota_evictions").Number(u.quota_evictions)
        .Key("quota_refusals").Number(u.quota_refusals)
        .Key("read_only_refusals").Number(r.read_only_refusals)
        .Key("connections").Number(r.connections)
        .EndObject();
  }
  w.EndArray();
}

constexpr StatusField kStatus[] = {
    {"version", [](const S& s, JsonWriter& w) { w.String(s.version); }},
    {"address", [](const S& s, JsonWriter& w) { w.String(s.address); }},
    {"server_id", [](const S& s, JsonWriter& w) { w.String(s.fleet->id()); }, HasFleet},
    {"state", [](const S& s, JsonWriter& w) { w.String(s.fleet->draining() ? "draining" : "serving"); }, HasFleet},
    {"capacity_bytes", [](const S& s, JsonWriter& w) { w.Number(s.fleet->identity().capacity_bytes); }, HasFleet},
    {"weight", [](const S& s, JsonWriter& w) { w.Number(s.fleet->effective_weight()); }, HasFleet},
    {"busy", [](const S& s, JsonWriter& w) { w.Bool(s.fleet->busy()); }, HasFleet},
    {"uptime_seconds", [](const S& s, JsonWriter& w) { w.Number(s.uptime_seconds); }},
    {"health", [](const S& s, JsonWriter& w) { WriteHealthJson(w, s.health); }},
    {"devices", WriteDevices},
    {"raw_bytes_total", [](const S& s, JsonWriter& w) { w.Number(TotalCapacity(s).raw); }},
    {"usable_bytes_total", [](const S& s, JsonWriter& w) { w.Number(TotalCapacity(s).usable); }},
    {"used_bytes_total", [](const S& s, JsonWriter& w) { w.Number(TotalCapacity(s).used); }},

    {"memory.pool_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.pool_bytes); }},
    {"memory.block_size_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.block_size_bytes); }},
    {"memory.used_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.used_bytes); }},
    {"memory.value_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.value_bytes); }},
    {"memory.free_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.free_bytes); }},
    {"memory.largest_free_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.largest_free_bytes); }},
    {"memory.fragmentation", [](const S& s, JsonWriter& w) { w.Number(s.memory.fragmentation()); }},
    {"memory.bytes_per_value_byte", [](const S& s, JsonWriter& w) { w.Number(s.memory.bytes_per_value_byte()); }},
    {"memory.keys", [](const S& s, JsonWriter& w) { w.Number(s.memory.keys); }},
    {"memory.hits", [](const S& s, JsonWriter& w) { w.Number(s.memory.hits); }},
    {"memory.misses", [](const S& s, JsonWriter& w) { w.Number(s.memory.misses); }},
    {"memory.evictions", [](const S& s, JsonWriter& w) { w.Number(s.memory.evictions); }},
    {"memory.checksum_failures", [](const S& s, JsonWriter& w) { w.Number(s.memory.checksum_failures); }},
    {"memory.expired", [](const S& s, JsonWriter& w) { w.Number(s.memory.expired); }},
    {"memory.pinned_values", [](const S& s, JsonWriter& w) { w.Number(s.memory.pinned_values); }},
    {"memory.pinned_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.pinned_bytes); }},
    {"memory.pinned_cap_bytes", [](const S& s, JsonWriter& w) { w.Number(s.memory.pinned_cap_bytes); }},
    {"memory.pin_refusals", [](const S& s, JsonWriter& w) { w.Number(s.memory.pin_refusals); }},
    {"memory.sent_value_checks", [](const S& s, JsonWriter& w) { w.Number(s.memory.later_checks); }},
    {"memory.sent_value_checks_skipped", [](const S& s, JsonWriter& w) { w.Number(s.memory.later_checks_skipped); }},
    {"memory.pages", [](const S& s, JsonWriter& w) { w.String(PageKindName(s.memory.page_kind)); }},

    {"storage.mode", [](const S& s, JsonWriter& w) { w.String(s.storage_mode); }},
    {"storage.io_engine", [](const S& s, JsonWriter& w) { w.String(s.drives->io_engine); }, HasDrives},
    {"storage.block_size_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->block_size_bytes); }, HasDrives},
    {"storage.degraded", [](const S& s, JsonWriter& w) { w.Bool(s.drives->degraded); }, HasDrives},
    {"storage.usable_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->usable_bytes()); }, HasDrives},
    {"storage.used_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->used_bytes()); }, HasDrives},
    {"storage.value_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->value_bytes); }, HasDrives},
    {"storage.free_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->free_bytes()); }, HasDrives},
    {"storage.largest_free_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->largest_free_bytes()); },
     HasDrives},
    {"storage.fragmentation", [](const S& s, JsonWriter& w) { w.Number(s.drives->fragmentation()); }, HasDrives},
    {"storage.bytes_per_value_byte", [](const S& s, JsonWriter& w) { w.Number(s.drives->bytes_per_value_byte()); },
     HasDrives},
    {"storage.keys", [](const S& s, JsonWriter& w) { w.Number(s.drives->keys); }, HasDrives},
    {"storage.journal_live_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->journal_live_bytes); },
     HasDrives},
    {"storage.journal_budget_bytes", [](const S& s, JsonWriter& w) { w.Number(s.drives->journal_budget_bytes); },
     HasDrives},
    {"storage.sync", [](const S& s, JsonWriter& w) { w.String(SyncModeName(s.drives->sync)); }, HasDrives},
    {"storage.drive_hits", [](const S& s, JsonWriter& w) { w.Number(s.tier.drive_hits); }, HasDrives},
    {"storage.promotions", [](const S& s, JsonWriter& w) { w.Number(s.tier.promotions); }, HasDrives},
    {"storage.evictions", [](const S& s, JsonWriter& w) { w.Number(s.tier.drive_evictions); }, HasDrives},
    {"storage.expired", [](const S& s, JsonWriter& w) { w.Number(s.drives->expired); }, HasDrives},
    {"storage.write_failures", [](const S& s, JsonWriter& w) { w.Number(s.tier.write_failures); }, HasDrives},
    {"storage.checksum_failures", [](const S& s, JsonWriter& w) { w.Number(s.drives->checksum_failures); },
     HasDrives},
    {"storage.io_errors", [](const S& s, JsonWriter& w) { w.Number(s.drives->io_errors); }, HasDrives},
    {"storage.restart_seconds", [](const S& s, JsonWriter& w) { w.Number(double(s.drives->open_nanos) / 1e9); },
     HasDrives},

    {"rdma.active", [](const S& s, JsonWriter& w) { w.Bool(s.rdma_active); }},
    {"rdma.path", [](const S& s, JsonWriter& w) { w.String(s.rdma_path); }, [](const S& s) { return s.rdma_active; }},
    {"rdma.connections", [](const S& s, JsonWriter& w) { w.Number(s.metrics->rdma_connections.Value()); }},
    {"rdma.refused", [](const S& s, JsonWriter& w) { w.Number(s.metrics->rdma_refused.Value()); }},
    {"rdma.put_bytes", [](const S& s, JsonWriter& w) { w.Number(s.metrics->rdma_put_bytes.Value()); }},
    {"rdma.get_bytes", [](const S& s, JsonWriter& w) { w.Number(s.metrics->rdma_get_bytes.Value()); }},
    {"rdma.leases_expired", [](const S& s, JsonWriter& w) { w.Number(s.metrics->rdma_leases_expired.Value()); }},

    {"connections.active",
     [](const S& s, JsonWriter& w) { w.Number(int64_t(s.metrics->connections_active.load(std::memory_order_relaxed))); }},
    {"connections.total", [](const S& s, JsonWriter& w) { w.Number(s.metrics->connections_accepted.Value()); }},

    {"requests_total", [](const S& s, JsonWriter& w) { w.Number(s.requests_total); }},
    {"ops_per_second", [](const S& s, JsonWriter& w) { w.Number(s.ops_per_second); }},
    {"hit_ratio",
     [](const S& s, JsonWriter& w) {
       const uint64_t gets = s.memory.hits + s.memory.misses;
       w.Number(gets == 0 ? 0.0 : double(s.memory.hits + s.tier.drive_hits) / double(gets));
     }},
    {"namespaces", WriteNamespaces},
    {"tenants", WriteTenants},
};

}  // namespace

std::vector<TenantRow> JoinTenantRows(std::vector<TenantCountsRow> requests, const TenantMap& map,
                                      const std::vector<TenantUsage>& usage) {
  std::vector<TenantRow> rows;
  std::vector<bool> joined(map.size(), false);
  auto fill = [&](TenantRow& row, uint32_t i) {
    row.configured = true;
    if (i < usage.size()) row.usage = usage[i];
    row.dram_quota_bytes = map[i].dram_quota_bytes;
    row.drive_quota_bytes = map[i].drive_quota_bytes;
    joined[i] = true;
  };
  for (TenantCountsRow& r : requests) {
    TenantRow& row = rows.emplace_back();
    row.requests = std::move(r);
    const uint32_t i = map.FindByName(row.name());
    if (i != TenantMap::kNone) fill(row, i);
  }
  for (uint32_t i = 0; i < map.size(); ++i) {
    if (joined[i]) continue;
    TenantRow& row = rows.emplace_back();
    row.requests.name = map[i].name;
    fill(row, i);
  }
  return rows;
}

std::span<const ServerMetric> ServerMetricTable() { return kMetrics; }
std::span<const StatusField> ServerStatusTable() { return kStatus; }

void WriteHealthJson(JsonWriter& w, const HealthReport& h) {
  w.BeginObject()
      .Key("status").String(h.status)
      .Key("reason").String(h.reason)
      .Key("rdma_active").Bool(h.rdma_active)
      .Key("drives_online").Number(uint64_t(h.drives_online))
      .Key("drives_offline").Number(uint64_t(h.drives_offline))
      .Key("drives_total").Number(uint64_t(h.drives_total))
      .EndObject();
}

std::string ServerMetricsText(const ServerSnapshot& snapshot) {
  metrics::PrometheusWriter writer;
  metrics::WriteTable(ServerMetricTable(), snapshot, &writer);
  return writer.Text();
}

std::string ServerStatusJson(const ServerSnapshot& snapshot) {
  JsonWriter w;
  w.BeginObject();
  std::string_view open;  // the section whose object is open; "" at the top level
  for (const StatusField& field : ServerStatusTable()) {
    if (field.present != nullptr && !field.present(snapshot)) continue;
    const size_t dot = field.path.find('.');
    const std::string_view section = dot == std::string_view::npos ? std::string_view() : field.path.substr(0, dot);
    const std::string_view key = dot == std::string_view::npos ? field.path : field.path.substr(dot + 1);
    if (section != open) {
      if (!open.empty()) w.EndObject();
      if (!section.empty()) w.Key(section).BeginObject();
      open = section;
    }
    w.Key(key);
    field.write(snapshot, w);
  }
  if (!open.empty()) w.EndObject();
  w.EndObject();
  return w.text();
}

}  // namespace memkv::server
