#include "server/metrics_table.h"

#include <vector>

#include "server/admin_auth.h"
#include "server/metrics_status.h"

namespace memkv::server {
namespace {

using metrics::Labels;
using metrics::MetricType;
using metrics::Samples;
using drive::DriveState;
using drive::DriveStateName;
using drive::DriveStats;
using S = ServerSnapshot;
using W = JsonWriter;

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

// The reader of a per-(tenant, identity) counter.
template <std::atomic<uint64_t> IdentityCounters::*Count>
void ReadIdentities(const ServerSnapshot& s, Samples& out) {
  for (const Identities::Row& row : s.identities) {
    out.Counter({{"tenant", row.tenant}, {"identity", row.identity}},
                (row.counters->*Count).load(std::memory_order_relaxed));
  }
}

template <metrics::Histogram IdentityCounters::*Latency>
void ReadIdentityLatency(const ServerSnapshot& s, Samples& out) {
  for (const Identities::Row& row : s.identities) {
    out.Histogram({{"tenant", row.tenant}, {"identity", row.identity}}, (row.counters->*Latency).Snapshot(),
                  metrics::kNanosPerSecond);
  }
}

// The reader of a per-namespace counter row: one sample per reported
// namespace, then "other".
template <uint64_t NamespaceCounts::*Count>
void ReadNamespaces(const S& s, Samples& out) {
  for (const NamespaceRow& row : s.namespaces) out.Counter({{"namespace", row.name}}, row.counts.*Count);
}

// The reader of a per-tenant request counter row.
template <uint64_t TenantCountsRow::*Count>
void ReadTenantRequests(const S& s, Samples& out) {
  for (const TenantRow& row : s.tenants) out.Counter({{"tenant", row.name()}}, row.requests.*Count);
}

// The reader of a per-tenant usage counter row (configured tenants only).
template <uint64_t TenantUsage::*Count>
void ReadTenantUsage(const S& s, Samples& out) {
  for (const TenantRow& row : s.tenants) {
    if (row.configured) out.Counter({{"tenant", row.name()}}, row.usage.*Count);
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

bool HasDrives(const S& s) { return s.drives.has_value(); }
bool HasFleet(const S& s) { return s.fleet != nullptr; }

// The three kinds of row (metrics/facts.h).
constexpr ServerFact Metric(std::string_view name, MetricType type, std::string_view labels, std::string_view help,
                            ServerFact::Read read) {
  return ServerFact::Metric(name, type, labels, help, read);
}
constexpr ServerFact Field(std::string_view path, ServerFact::Write write, ServerFact::Present present = nullptr) {
  return ServerFact::Field(path, write, present);
}
constexpr ServerFact Object(std::string_view section) { return ServerFact::Object(section); }

// Every fact, once. Families in the order the exposition lists them; each
// reader emits its samples in label order (ops in OpSlot order, dram before
// the drives). A family shown in /v1/status names its fields with
// `.Status(path, label values)`; a status field computed otherwise is a
// Field row or a `.WithField` of the family it belongs to.
constexpr ServerFact kFacts[] = {
    Metric("memkv_build_info", kGauge, "version", "The running binary's version.",
     [](const S& s, Samples& out) { out.Gauge({{"version", s.version}}, 1); })
        .WithField("version", [](const S& s, W& w) { w.String(s.version); }),
    Field("address", [](const S& s, W& w) { w.String(s.address); }),
    Metric("memkv_uptime_seconds", kGauge, "", "Seconds since the server started.",
     [](const S& s, Samples& out) { out.Gauge({}, s.uptime_seconds); })
        .Status("uptime_seconds"),
    Metric("memkv_health", kGauge, "status", "1 for the current health status (/v1/health), 0 for the others.",
     [](const S& s, Samples& out) {
       for (const char* status : {"healthy", "degraded", "unhealthy"}) {
         out.Gauge({{"status", status}}, s.health.status == status ? 1 : 0);
       }
     })
        .WithField("health", [](const S& s, W& w) { WriteHealthJson(w, s.health); }),
    // Fleet (docs/fleet.md).
    Metric("memkv_server_info", kGauge, "server_id", "This server's id (docs/fleet.md, \"Server identity\").",
     [](const S& s, Samples& out) {
       if (s.fleet != nullptr) out.Gauge({{"server_id", s.fleet->id()}}, 1);
     })
        .WithField("server_id", [](const S& s, W& w) { w.String(s.fleet->id()); }, HasFleet),
    Metric("memkv_draining", kGauge, "", "1 while the server is draining (takes no new keys), else 0.",
     [](const S& s, Samples& out) { out.Gauge({}, s.fleet != nullptr && s.fleet->draining() ? 1 : 0); })
        .WithField("state", [](const S& s, W& w) { w.String(s.fleet->draining() ? "draining" : "serving"); }, HasFleet),
    Field("capacity_bytes", [](const S& s, W& w) { w.Number(s.fleet->identity().capacity_bytes); }, HasFleet),
    Field("weight", [](const S& s, W& w) { w.Number(s.fleet->effective_weight()); }, HasFleet),
    Field("busy", [](const S& s, W& w) { w.Bool(s.fleet->busy()); }, HasFleet),
    Metric("memkv_put_queue_bytes", kGauge, "",
     "Bytes of puts accepted and waiting for the drives (Busy at storage.busy_queue_size).",
     [](const S& s, Samples& out) { out.Gauge({}, s.fleet != nullptr ? double(s.fleet->queued_bytes()) : 0); }),
    Metric("memkv_requests_shed_total", kCounter, "reason", "Puts refused without storing: draining, or busy.",
     [](const S& s, Samples& out) {
       out.Counter({{"reason", "draining"}}, s.fleet != nullptr ? s.fleet->shed_draining() : 0);
       out.Counter({{"reason", "busy"}}, s.fleet != nullptr ? s.fleet->shed_busy() : 0);
     }),

    // Where /v1/status has its capacity totals and its objects (each holds
    // the fields of its section, from anywhere in the table).
    Field("devices", WriteDevicesJson),
    Field("raw_bytes_total", [](const S& s, W& w) { w.Number(TotalCapacity(s).raw); }),
    Field("usable_bytes_total", [](const S& s, W& w) { w.Number(TotalCapacity(s).usable); }),
    Field("used_bytes_total", [](const S& s, W& w) { w.Number(TotalCapacity(s).used); }),
    Object("memory"),
    Object("storage"),
    Field("storage.mode", [](const S& s, W& w) { w.String(s.storage_mode); }),
    Object("rdma"),
    Object("connections"),
    Field("requests_total", [](const S& s, W& w) { w.Number(s.requests_total); }),
    Field("ops_per_second", [](const S& s, W& w) { w.Number(s.ops_per_second); }),
    Field("hit_ratio", [](const S& s, W& w) {
       const uint64_t gets = s.memory.hits + s.memory.misses;
       w.Number(gets == 0 ? 0.0 : double(s.memory.hits + s.tier.drive_hits) / double(gets));
     }),

    // Per operation.
    Metric("memkv_requests_total", kCounter, "op,transport", "Requests answered, by operation and transport.",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) out.Counter(OpLabels(i), s.metrics->ops[i].requests.Value());
     }),
    Metric("memkv_request_errors_total", kCounter, "op,transport",
     "Requests answered with an error (a status other than ok or not found).",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) out.Counter(OpLabels(i), s.metrics->ops[i].errors.Value());
     }),
    Metric("memkv_value_bytes_total", kCounter, "op,transport", "Value bytes stored (puts) or served (gets).",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) out.Counter(OpLabels(i), s.metrics->ops[i].value_bytes.Value());
     }),
    Metric("memkv_request_duration_seconds", kHistogram, "op,transport",
     "From a request's header arriving to its response being queued, drive work included.",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < kOpSlots; ++i) {
         out.Histogram(OpLabels(i), s.metrics->ops[i].latency.Snapshot(), metrics::kNanosPerSecond);
       }
     }),

    // Connections and the network.
    Metric("memkv_connections_active", kGauge, "", "Client connections open now.",
     [](const S& s, Samples& out) {
       out.Gauge({}, double(s.metrics->connections_active.load(std::memory_order_relaxed)));
     })
        .Status("connections.active"),
    Metric("memkv_connections_accepted_total", kCounter, "", "Client connections accepted.",
     ReadCell<&ServerMetrics::connections_accepted>)
        .Status("connections.total"),
    Metric("memkv_accept_failures_total", kCounter, "",
     "accept(2) failures for lack of descriptors or memory; each pauses accepts for 100 ms.",
     ReadCell<&ServerMetrics::accept_failures>),
    Metric("memkv_connections_closed_total", kCounter, "reason", "Connections the server closed, by reason.",
     [](const S& s, Samples& out) {
       const ServerMetrics& m = *s.metrics;
       out.Counter({{"reason", "handshake_timeout"}}, m.connections_closed_idle.Value());
       out.Counter({{"reason", "write_stall"}}, m.connections_closed_stalled.Value());
       out.Counter({{"reason", "frame_timeout"}}, m.connections_closed_frame_timeout.Value());
       out.Counter({{"reason", "rdma_lease"}}, m.rdma_leases_expired.Value());
     }),
    Metric("memkv_connections_refused_total", kCounter, "reason",
     "Connections closed at once on accept because a connection limit was reached, by limit "
     "(network.max_connections, network.max_unauthenticated_connections).",
     [](const S& s, Samples& out) {
       out.Counter({{"reason", "max_connections"}}, s.metrics->connections_refused_max_connections.Value());
       out.Counter({{"reason", "max_unauthenticated"}}, s.metrics->connections_refused_max_unauthenticated.Value());
     }),
    Metric("memkv_connections_shed_total", kCounter, "",
     "Unauthenticated connections closed, oldest first, to admit a newer one while "
     "network.max_unauthenticated_connections was reached.",
     ReadCell<&ServerMetrics::connections_shed>),
    Metric("memkv_store_turns_yielded_total", kCounter, "",
     "Turns of a connection receiving a put's value cut at 256 KiB so that connections waiting on a load "
     "go first (network.loads_first).",
     ReadCell<&ServerMetrics::store_turns_yielded>),
    Metric("memkv_loads_served_first_total", kCounter, "",
     "Turns of connections waiting on a load served ahead of ready connections receiving a put's value "
     "(network.loads_first).",
     ReadCell<&ServerMetrics::loads_served_first>),
    Metric("memkv_worker_idle_spells_total", kCounter, "outcome",
     "Times a worker had nothing left to do, by how the spell ended: polled, a request came while it "
     "polled its connections (network.busy_poll_us) and was served without a wakeup; slept, it slept in "
     "epoll_wait.",
     [](const S& s, Samples& out) {
       out.Counter({{"outcome", "polled"}}, s.metrics->idle_spells_polled.Value());
       out.Counter({{"outcome", "slept"}}, s.metrics->idle_spells_slept.Value());
     }),
    Metric("memkv_worker_poll_seconds_total", kCounter, "",
     "Wall time the workers spent polling their connections with nothing to do (network.busy_poll_us), "
     "including the time other threads ran on the core a worker yielded between polls.",
     [](const S& s, Samples& out) { out.Counter({}, s.metrics->idle_poll_ns.Value(), metrics::kNanosPerSecond); }),
    Metric("memkv_admin_auth_failures_total", kCounter, "reason",
     "State-changing admin requests refused for failed authentication, by reason.",
     [](const S& s, Samples& out) {
       for (size_t i = 0; i < s.metrics->admin_auth_failures.size(); ++i) {
         out.Counter({{"reason", std::string(AdminAuthFailureName(static_cast<AdminAuthFailure>(i)))}},
                     s.metrics->admin_auth_failures[i].Value());
       }
     }),
    Metric("memkv_admin_connections_shed_total", kCounter, "",
     "Admin connections without a complete request closed, oldest first, to admit a newer one while "
     "the admin endpoint's 64 connections were open.",
     [](const S& s, Samples& out) { out.Counter({}, s.admin_http.shed); }),
    Metric("memkv_admin_connections_refused_total", kCounter, "",
     "Admin connections answered 503 or closed at once because all 64 were writing responses.",
     [](const S& s, Samples& out) { out.Counter({}, s.admin_http.rejected_busy); }),
    Metric("memkv_auth_failures_total", kCounter, "", "Frames or connections refused for failed authentication.",
     ReadCell<&ServerMetrics::auth_failures>),
    Metric("memkv_protocol_errors_total", kCounter, "",
     "Malformed frames, unknown opcodes and similar protocol errors.",
     ReadCell<&ServerMetrics::protocol_errors>),
    Metric("memkv_unsupported_version_total", kCounter, "", "Frames of a protocol version this server does not speak.",
     ReadCell<&ServerMetrics::unsupported_version>),
    Metric("memkv_network_received_bytes_total", kCounter, "", "Bytes read from client sockets.",
     ReadCell<&ServerMetrics::bytes_received>),
    Metric("memkv_network_sent_bytes_total", kCounter, "", "Bytes written to client sockets.",
     ReadCell<&ServerMetrics::bytes_sent>),

    // Data integrity.
    Metric("memkv_checksum_failures_total", kCounter, "where",
     "Values or payloads whose bytes did not match their checksum, by where it was caught.",
     [](const S& s, Samples& out) {
       out.Counter({{"where", "payload"}}, s.metrics->payload_checksum_failures.Value());
       out.Counter({{"where", "rdma_commit"}}, s.metrics->rdma_commit_checksum_failures.Value());
       out.Counter({{"where", "dram"}}, s.memory.checksum_failures);
       if (s.drives) out.Counter({{"where", "drive"}}, s.drives->checksum_failures);
     })
        .Status("memory.checksum_failures", "dram")
        .Status("storage.checksum_failures", "drive"),
    Metric("memkv_decrypt_failures_total", kCounter, "",
     "Encrypted values read from the drives that failed their authentication tag (each a miss, the value dropped).",
     [](const S& s, Samples& out) { if (s.drives) out.Counter({}, s.drives->decrypt_failures); }),
    Metric("memkv_sent_value_checks_total", kCounter, "result",
     "DRAM values sent to a TCP reader (which checks them end to end) and then checked by the server: "
     "hashed, or skipped because the bytes had matched within memory.read_check_interval_ms.",
     [](const S& s, Samples& out) {
       out.Counter({{"result", "hashed"}}, s.memory.later_checks);
       out.Counter({{"result", "skipped_recent"}}, s.memory.later_checks_skipped);
     })
        .Status("memory.sent_value_checks", "hashed")
        .Status("memory.sent_value_checks_skipped", "skipped_recent"),

    // The cache: DRAM hits, drive hits (DRAM misses served by a drive), misses.
    Metric("memkv_cache_hits_total", kCounter, "tier", "Gets served, by the tier that held the value.",
     [](const S& s, Samples& out) {
       out.Counter({{"tier", "dram"}}, s.memory.hits);
       out.Counter({{"tier", "drive"}}, s.tier.drive_hits);
     })
        .Status("memory.hits", "dram")
        .Status("storage.drive_hits", "drive", HasDrives),
    Metric("memkv_cache_misses_total", kCounter, "", "Gets of values in no tier.",
     [](const S& s, Samples& out) {
       out.Counter({}, s.memory.misses >= s.tier.drive_hits ? s.memory.misses - s.tier.drive_hits : 0);
     }),
    // DRAM misses, drive hits included.
    Field("memory.misses", [](const S& s, W& w) { w.Number(s.memory.misses); }),
    Metric("memkv_evictions_total", kCounter, "tier", "Values evicted to make room, by tier.",
     [](const S& s, Samples& out) {
       out.Counter({{"tier", "dram"}}, s.memory.evictions);
       out.Counter({{"tier", "drive"}}, s.tier.drive_evictions);
     })
        .Status("memory.evictions", "dram")
        .Status("storage.evictions", "drive", HasDrives),
    Metric("memkv_expired_total", kCounter, "tier", "Values freed because their TTL ran out, by tier.",
     [](const S& s, Samples& out) {
       out.Counter({{"tier", "dram"}}, s.memory.expired);
       if (s.drives) out.Counter({{"tier", "drive"}}, s.drives->expired);
     })
        .Status("memory.expired", "dram")
        .Status("storage.expired", "drive"),
    Metric("memkv_pinned_bytes", kGauge, "", "DRAM pool room held by values of retention class pinned.",
     [](const S& s, Samples& out) { out.Gauge({}, double(s.memory.pinned_bytes)); })
        .Status("memory.pinned_bytes"),
    Metric("memkv_pinned_cap_bytes", kGauge, "", "The most room pinned values may take (memory.pinned_max_fraction).",
     [](const S& s, Samples& out) { out.Gauge({}, double(s.memory.pinned_cap_bytes)); })
        .Status("memory.pinned_cap_bytes"),
    Metric("memkv_pin_refusals_total", kCounter, "", "Pinned puts refused because pinned values were at their cap.",
     [](const S& s, Samples& out) { out.Counter({}, s.memory.pin_refusals); })
        .Status("memory.pin_refusals"),
    Field("memory.pinned_values", [](const S& s, W& w) { w.Number(s.memory.pinned_values); }),
    Metric("memkv_promotions_total", kCounter, "", "Values read from a drive and copied back into DRAM.",
     [](const S& s, Samples& out) { out.Counter({}, s.tier.promotions); })
        .Status("storage.promotions", "", HasDrives),
    Metric("memkv_keys", kGauge, "tier", "Values held, by tier.",
     [](const S& s, Samples& out) {
       out.Gauge({{"tier", "dram"}}, double(s.memory.keys));
       if (s.drives) out.Gauge({{"tier", "drive"}}, double(s.drives->keys));
     })
        .Status("memory.keys", "dram")
        .Status("storage.keys", "drive"),

    // Capacity, per device (the DRAM pool, each drive).
    Metric("memkv_capacity_raw_bytes", kGauge, "device", "Raw size of each device (the DRAM pool, each drive).",
     [](const S& s, Samples& out) {
       out.Gauge({{"device", "dram"}}, double(s.memory.pool_bytes));
       for (const DriveStats& d : Drives(s)) out.Gauge({{"device", DeviceName(d)}}, double(d.raw_bytes));
     })
        .Status("memory.pool_bytes", "dram"),
    Metric("memkv_capacity_usable_bytes", kGauge, "device", "Bytes of each device that can hold values.",
     [](const S& s, Samples& out) {
       out.Gauge({{"device", "dram"}}, double(s.memory.pool_bytes));
       for (const DriveStats& d : Drives(s)) out.Gauge({{"device", DeviceName(d)}}, double(d.usable_bytes));
     }),
    Metric("memkv_capacity_used_bytes", kGauge, "device",
     "Bytes of each device's capacity consumed: values rounded up to the allocation unit, and room reserved "
     "by puts in flight.",
     [](const S& s, Samples& out) {
       out.Gauge({{"device", "dram"}}, double(s.memory.used_bytes));
       for (const DriveStats& d : Drives(s)) out.Gauge({{"device", DeviceName(d)}}, double(d.used_bytes));
     })
        .Status("memory.used_bytes", "dram"),
    Metric("memkv_stored_value_bytes", kGauge, "tier", "Bytes of the values held, by tier.",
     [](const S& s, Samples& out) {
       out.Gauge({{"tier", "dram"}}, double(s.memory.value_bytes));
       if (s.drives) out.Gauge({{"tier", "drive"}}, double(s.drives->value_bytes));
     })
        .Status("memory.value_bytes", "dram")
        .Status("storage.value_bytes", "drive"),
    Metric("memkv_fragmentation_ratio", kGauge, "tier",
     "Share of the free bytes outside the longest free run (per drive for the drive tier), by tier: 0 when the "
     "free room is in one piece.",
     [](const S& s, Samples& out) {
       out.Gauge({{"tier", "dram"}}, s.memory.fragmentation());
       if (s.drives) out.Gauge({{"tier", "drive"}}, s.drives->fragmentation());
     })
        .Status("memory.fragmentation", "dram")
        .Status("storage.fragmentation", "drive"),

    // The pool and the drives, beyond what the families above show.
    Field("memory.block_size_bytes", [](const S& s, W& w) { w.Number(s.memory.block_size_bytes); }),
    Field("memory.free_bytes", [](const S& s, W& w) { w.Number(s.memory.free_bytes); }),
    Field("memory.largest_free_bytes", [](const S& s, W& w) { w.Number(s.memory.largest_free_bytes); }),
    Field("memory.bytes_per_value_byte", [](const S& s, W& w) { w.Number(s.memory.bytes_per_value_byte()); }),
    Field("memory.pages", [](const S& s, W& w) { w.String(PageKindName(s.memory.page_kind)); }),
    Field("storage.io_engine", [](const S& s, W& w) { w.String(s.drives->io_engine); }, HasDrives),
    Field("storage.block_size_bytes", [](const S& s, W& w) { w.Number(s.drives->block_size_bytes); }, HasDrives),
    Field("storage.degraded", [](const S& s, W& w) { w.Bool(s.drives->degraded); }, HasDrives),
    Field("storage.usable_bytes", [](const S& s, W& w) { w.Number(s.drives->usable_bytes()); }, HasDrives),
    Field("storage.used_bytes", [](const S& s, W& w) { w.Number(s.drives->used_bytes()); }, HasDrives),
    Field("storage.free_bytes", [](const S& s, W& w) { w.Number(s.drives->free_bytes()); }, HasDrives),
    Field("storage.largest_free_bytes", [](const S& s, W& w) { w.Number(s.drives->largest_free_bytes()); }, HasDrives),
    Field("storage.bytes_per_value_byte", [](const S& s, W& w) { w.Number(s.drives->bytes_per_value_byte()); },
          HasDrives),
    Field("storage.journal_live_bytes", [](const S& s, W& w) { w.Number(s.drives->journal_live_bytes); }, HasDrives),
    Field("storage.journal_budget_bytes", [](const S& s, W& w) { w.Number(s.drives->journal_budget_bytes); },
          HasDrives),
    Field("storage.sync", [](const S& s, W& w) { w.String(SyncModeName(s.drives->sync)); }, HasDrives),
    Field("storage.restart_seconds", [](const S& s, W& w) { w.Number(double(s.drives->open_nanos) / 1e9); }, HasDrives),

    // The drives (file and direct modes only: no samples in memory mode).
    Metric("memkv_drive_state", kGauge, "device,state", "1 for each drive's current state, 0 for the others.",
     [](const S& s, Samples& out) {
       for (const DriveStats& d : Drives(s)) {
         const std::string device = DeviceName(d);
         for (DriveState state : {DriveState::kOnline, DriveState::kFull, DriveState::kOffline}) {
           out.Gauge({{"device", device}, {"state", DriveStateName(state)}}, d.state == state ? 1 : 0);
         }
       }
     }),
    Metric("memkv_drive_io_errors_total", kCounter, "", "Drive reads, writes and syncs that failed.",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.drives->io_errors);
     })
        .Status("storage.io_errors"),
    Metric("memkv_drive_write_failures_total", kCounter, "", "Puts the drives refused (full, offline, I/O error).",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.tier.write_failures);
     })
        .Status("storage.write_failures"),
    Metric("memkv_drive_journal_commits_total", kCounter, "", "Journal writes (each may carry several operations).",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.drives->journal_commits);
     }),
    Metric("memkv_drive_commit_waits_total", kCounter, "",
           "storage.sync always: journal commits that waited for puts still writing their values to join them "
           "(at most as long as the last flush took).",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.drives->commit_waits);
     }),
    Metric("memkv_drive_loop_commits_total", kCounter, "",
           "storage.sync always: turns whose puts a worker wrote and flushed itself (storage.flush_on_loop_us) "
           "instead of handing them to an I/O thread.",
     [](const S& s, Samples& out) {
       if (s.drives) out.Counter({}, s.tier.loop_commits);
     }),

    // RDMA.
    Metric("memkv_rdma_active", kGauge, "", "1 when the server accepts RDMA (a device is configured and up).",
     [](const S& s, Samples& out) { out.Gauge({}, s.rdma_active ? 1 : 0); })
        .WithField("rdma.active", [](const S& s, W& w) { w.Bool(s.rdma_active); }),
    Field("rdma.path", [](const S& s, W& w) { w.String(s.rdma_path); }, [](const S& s) { return s.rdma_active; }),
    Metric("memkv_rdma_connections_total", kCounter, "result", "RDMA offers at Connect, by result.",
     [](const S& s, Samples& out) {
       out.Counter({{"result", "accepted"}}, s.metrics->rdma_connections.Value());
       out.Counter({{"result", "refused"}}, s.metrics->rdma_refused.Value());
     })
        .Status("rdma.connections", "accepted")
        .Status("rdma.refused", "refused"),
    Metric("memkv_rdma_bytes_total", kCounter, "direction", "Value bytes clients moved by RDMA, by direction.",
     [](const S& s, Samples& out) {
       out.Counter({{"direction", "put"}}, s.metrics->rdma_put_bytes.Value());
       out.Counter({{"direction", "get"}}, s.metrics->rdma_get_bytes.Value());
     })
        .Status("rdma.put_bytes", "put")
        .Status("rdma.get_bytes", "get"),
    // memkv_connections_closed_total{reason="rdma_lease"}'s cell, shown here
    // rather than from that family so that it stays the last field of "rdma".
    Field("rdma.leases_expired", [](const S& s, W& w) { w.Number(s.metrics->rdma_leases_expired.Value()); }),

    // Namespaces (metrics.namespace_separator, metrics.namespace_top).
    Metric("memkv_namespace_lookups_total", kCounter, "namespace",
     "Blocks asked for (each key of a get, an exists or a prefix match), by key namespace.",
     ReadNamespaces<&NamespaceCounts::lookups>),
    Metric("memkv_namespace_hits_total", kCounter, "namespace",
     "Blocks asked for and found (a prefix match's matched keys), by key namespace.",
     ReadNamespaces<&NamespaceCounts::hits>),
    Metric("memkv_namespace_read_bytes_total", kCounter, "namespace", "Value bytes served, by key namespace.",
     ReadNamespaces<&NamespaceCounts::read_bytes>),
    Metric("memkv_namespace_puts_total", kCounter, "namespace", "Values stored, by key namespace.",
     ReadNamespaces<&NamespaceCounts::puts>),
    Metric("memkv_namespace_written_bytes_total", kCounter, "namespace", "Value bytes stored, by key namespace.",
     ReadNamespaces<&NamespaceCounts::written_bytes>),
    Metric("memkv_namespace_evictions_total", kCounter, "namespace",
     "Values evicted to make room (any tier), by key namespace.", ReadNamespaces<&NamespaceCounts::evictions>),
    Field("namespaces", WriteNamespacesJson),

    // Tenants (docs/tenants.md): every tenant in the config, and any a
    // reload removed, which keeps its request counts.
    Metric("memkv_tenant_bytes", kGauge, "tenant,tier", "Value bytes a tenant holds, by tier.",
     ReadTenantTiers<&TenantUsage::dram_bytes, &TenantUsage::drive_bytes>),
    Metric("memkv_tenant_keys", kGauge, "tenant,tier", "Values a tenant holds, by tier.",
     ReadTenantTiers<&TenantUsage::dram_keys, &TenantUsage::drive_keys>),
    Metric("memkv_tenant_quota_bytes", kGauge, "tenant,tier", "A tenant's byte quota, by tier (tenants with one only).",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) {
         if (!row.configured) continue;
         if (row.dram_quota_bytes > 0) {
           out.Gauge({{"tenant", row.name()}, {"tier", "dram"}}, double(row.dram_quota_bytes));
         }
         if (s.drives && row.drive_quota_bytes > 0) {
           out.Gauge({{"tenant", row.name()}, {"tier", "drive"}}, double(row.drive_quota_bytes));
         }
       }
     }),
    Metric("memkv_tenant_lookups_total", kCounter, "tenant",
     "Blocks a tenant asked for (each key of a get, an exists or a prefix match).",
     ReadTenantRequests<&TenantCountsRow::lookups>),
    Metric("memkv_tenant_hits_total", kCounter, "tenant", "Blocks a tenant asked for and found.",
     ReadTenantRequests<&TenantCountsRow::hits>),
    Metric("memkv_tenant_misses_total", kCounter, "tenant", "Blocks a tenant asked for and did not find.",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) out.Counter({{"tenant", row.name()}}, row.requests.misses());
     }),
    Metric("memkv_tenant_read_bytes_total", kCounter, "tenant", "Value bytes served to a tenant.",
     ReadTenantRequests<&TenantCountsRow::read_bytes>),
    Metric("memkv_tenant_puts_total", kCounter, "tenant", "Values a tenant stored.",
     ReadTenantRequests<&TenantCountsRow::puts>),
    Metric("memkv_tenant_written_bytes_total", kCounter, "tenant", "Value bytes a tenant stored.",
     ReadTenantRequests<&TenantCountsRow::written_bytes>),
    Metric("memkv_tenant_evictions_total", kCounter, "tenant", "A tenant's values evicted (any tier, any cause).",
     ReadTenantUsage<&TenantUsage::evictions>),
    Metric("memkv_tenant_quota_evictions_total", kCounter, "tenant",
     "A tenant's values evicted to keep it within its own quota.", ReadTenantUsage<&TenantUsage::quota_evictions>),
    Metric("memkv_tenant_refusals_total", kCounter, "tenant,reason",
     "A tenant's requests refused: quota (what is left is pinned or being read), read_only, max_connections "
     "(a Connect while tenants[].max_connections were open).",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) {
         out.Counter({{"tenant", row.name()}, {"reason", "quota"}}, row.usage.quota_refusals);
         out.Counter({{"tenant", row.name()}, {"reason", "read_only"}}, row.requests.read_only_refusals);
         out.Counter({{"tenant", row.name()}, {"reason", "max_connections"}}, row.requests.connections_refused);
       }
     }),
    Metric("memkv_tenant_connections_total", kCounter, "tenant", "Connections authenticated with a tenant's keys.",
     ReadTenantRequests<&TenantCountsRow::connections>),
    Metric("memkv_tenant_connections", kGauge, "tenant", "Connections open with a tenant's keys.",
     [](const S& s, Samples& out) {
       for (const TenantRow& row : s.tenants) {
         out.Gauge({{"tenant", row.name()}}, double(row.requests.open_connections));
       }
     }),
    Field("tenants", WriteTenantsJson),

    // Cache identities (identities.*; docs/client-library.md, "Cache identity"),
    // per tenant ("" for the administrator's connections).
    Metric("memkv_identity_info", kGauge,
     "identity,model,revision,kv_dtype,layout,block_tokens,tp_rank,tp_size,engine,engine_version",
     "A cache identity the server has filed under its tag (always 1): its fields.",
     [](const S& s, Samples& out) {
       for (const auto& [tag, id] : s.identity_info) {
         out.Gauge({{"identity", tag}, {"model", id.model}, {"revision", id.revision}, {"kv_dtype", id.kv_dtype},
                    {"layout", id.layout}, {"block_tokens", std::to_string(id.block_tokens)},
                    {"tp_rank", std::to_string(id.tp_rank)}, {"tp_size", std::to_string(id.tp_size)},
                    {"engine", id.engine}, {"engine_version", id.engine_version}},
                   1.0);
       }
     }),
    Metric("memkv_identity_lookups_total", kCounter, "tenant,identity",
     "Blocks looked up (each key of a get, an exists or a prefix match), by tenant and cache identity.",
     ReadIdentities<&IdentityCounters::lookups>),
    Metric("memkv_identity_found_total", kCounter, "tenant,identity",
     "Blocks looked up and found, by tenant and cache identity.", ReadIdentities<&IdentityCounters::found>),
    Metric("memkv_identity_fetched_total", kCounter, "tenant,identity",
     "Blocks whose bytes were served (gets that found their value), by tenant and cache identity.",
     ReadIdentities<&IdentityCounters::fetched>),
    Metric("memkv_identity_fetched_bytes_total", kCounter, "tenant,identity",
     "Value bytes served, by tenant and cache identity.", ReadIdentities<&IdentityCounters::fetched_bytes>),
    Metric("memkv_identity_fetched_in_time_total", kCounter, "tenant,identity",
     "Fetched blocks the engine used, as its clients report (it did not recompute them).",
     ReadIdentities<&IdentityCounters::fetched_in_time>),
    Metric("memkv_identity_fetched_late_total", kCounter, "tenant,identity",
     "Fetched blocks that came too late for the engine to use, as its clients report.",
     ReadIdentities<&IdentityCounters::fetched_late>),
    Metric("memkv_identity_stores_total", kCounter, "tenant,identity", "Values stored, by tenant and cache identity.",
     ReadIdentities<&IdentityCounters::stores>),
    Metric("memkv_identity_stored_bytes_total", kCounter, "tenant,identity",
     "Value bytes stored, by tenant and cache identity.", ReadIdentities<&IdentityCounters::stored_bytes>),
    Metric("memkv_identity_stores_shed_total", kCounter, "tenant,identity",
     "Stores the clients dropped, not stored: shed by the client while the tier was slow, or answered Busy by a "
     "server; as the clients report.",
     ReadIdentities<&IdentityCounters::stores_shed>),
    Metric("memkv_identity_evictions_total", kCounter, "tenant,identity,tier,reason",
     "Values that left the store other than by a delete or a replacement: evicted to make room, expired, or "
     "dropped for a failed checksum; by tier (dram: the drives may still hold it), tenant and cache identity.",
     [](const S& s, Samples& out) {
       for (const Identities::Row& row : s.identities) {
         for (size_t tier = 0; tier < 2; ++tier) {
           if (tier == 1 && !s.drives) continue;
           for (size_t r = 0; r < kCountedRemovals.size(); ++r) {
             out.Counter({{"tenant", row.tenant}, {"identity", row.identity}, {"tier", tier == 0 ? "dram" : "drive"},
                          {"reason", storage::RemovalReasonName(kCountedRemovals[r])}},
                         row.counters->evictions[tier][r].load(std::memory_order_relaxed));
           }
         }
       }
     }),
    Metric("memkv_identity_load_seconds", kHistogram, "tenant,identity",
     "Latency of loads (get, batch get, RDMA get), by tenant and cache identity.",
     ReadIdentityLatency<&IdentityCounters::load>),
    Metric("memkv_identity_store_seconds", kHistogram, "tenant,identity",
     "Latency of stores (put, batch put, RDMA commit), by tenant and cache identity.",
     ReadIdentityLatency<&IdentityCounters::store>),
    Field("identities", WriteIdentitiesJson),
    // Block events (events.publish set only: no samples otherwise).
    Metric("memkv_events_published_total", kCounter, "", "Block events sent to subscribers.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->events_published);
     }),
    Metric("memkv_events_batches_total", kCounter, "", "Event batches sent, each with its own sequence number.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->batches_published);
     }),
    Metric("memkv_events_dropped_total", kCounter, "", "Block events dropped because the publish queue was full.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->events_dropped);
     }),
    Metric("memkv_events_replay_requests_total", kCounter, "", "Replay requests served on the replay socket.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replay_requests);
     }),
    Metric("memkv_events_replay_misses_total", kCounter, "",
     "Replay requests for a sequence older than the replay buffer holds, or replays that fell behind it.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replay_misses);
     }),
    Metric("memkv_events_replay_bad_requests_total", kCounter, "",
     "Malformed replay requests, not answered (logged once per 10 s).",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replay_bad_requests);
     }),
    Metric("memkv_events_replays_cut_total", kCounter, "",
     "Replays ended early (the peer took nothing for 30 s, or too many replays at once); the end marker names "
     "the first batch not sent.",
     [](const S& s, Samples& out) {
       if (s.events) out.Counter({}, s.events->replays_cut);
     }),
    Metric("memkv_events_replays_active", kGauge, "", "Replays in progress, each paced by its peer.",
     [](const S& s, Samples& out) {
       if (s.events) out.Gauge({}, double(s.events->replays_active));
     }),
    Metric("memkv_events_replay_queued_bytes", kGauge, "",
     "Replay payload bytes queued in ZeroMQ and not yet written to the peers' sockets.",
     [](const S& s, Samples& out) {
       if (s.events) out.Gauge({}, double(s.events->replay_queued_bytes));
     }),
};

}  // namespace

std::span<const ServerFact> ServerFactTable() { return kFacts; }

std::span<const ServerMetric> ServerMetricTable() {
  static const std::vector<ServerMetric> kFamilies = metrics::Families(ServerFactTable());
  return kFamilies;
}

std::span<const StatusField> ServerStatusTable() {
  static const std::vector<StatusField> kFields = metrics::StatusFields(ServerFactTable());
  return kFields;
}

std::string ServerMetricsText(const ServerSnapshot& snapshot) {
  metrics::PrometheusWriter writer;
  metrics::WriteTable(ServerMetricTable(), snapshot, &writer);
  return writer.Text();
}

std::string ServerStatusJson(const ServerSnapshot& snapshot) {
  return metrics::WriteStatusJson(ServerStatusTable(), snapshot);
}

}  // namespace memkv::server
