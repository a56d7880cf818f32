#include "server/admin.h"

#include <algorithm>
#include <string>

#include "base/json.h"
#include "base/log.h"
#include "http/tls_context.h"
#include "metrics/prometheus.h"

namespace memkv {
namespace {

constexpr size_t kRateSamples = 11;  // ops/s over the last 10 intervals

double Seconds(Nanos ns) { return double(ns) / 1e9; }

http::HttpResponse Json(int status, std::string body) {
  http::HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body) + "\n";
  return r;
}

}  // namespace

AdminService::AdminService(const AdminOptions& options, const AdminSources& sources)
    : options_(options), sources_(sources), started_(MonotonicNanos()) {}

Result<std::unique_ptr<AdminService>> AdminService::Start(const AdminOptions& options,
                                                          const AdminSources& sources) {
  std::unique_ptr<AdminService> admin(new AdminService(options, sources));
  http::HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.tls_cert_path = options.tls_cert_path;
  http.tls_key_path = options.tls_key_path;
  http.tls = http::CreateOpenSslServer;
  MEMKV_ASSIGN_OR_RETURN(admin->http_, http::HttpServer::Create(http));
  AdminService* self = admin.get();
  MEMKV_RETURN_IF_ERROR(admin->http_->Handle("GET", "/v1/health", [self](const http::HttpRequest&) {
    const bool unhealthy = self->Health().status == "unhealthy";
    return Json(unhealthy ? 503 : 200, self->HealthJson());
  }));
  MEMKV_RETURN_IF_ERROR(admin->http_->Handle("GET", "/v1/ready", [self](const http::HttpRequest&) {
    const bool serving = self->sources_.serving && self->sources_.serving();
    return http::HttpResponse::Text(serving ? 200 : 503, serving ? "ok\n" : "not serving (starting or draining)\n");
  }));
  MEMKV_RETURN_IF_ERROR(admin->http_->Handle(
      "GET", "/v1/status", [self](const http::HttpRequest&) { return Json(200, self->StatusJson()); }));
  // Prometheus scrapes /metrics unless told otherwise, so the same text is
  // served there too.
  for (const char* path : {"/v1/metrics", "/metrics"}) {
    MEMKV_RETURN_IF_ERROR(admin->http_->Handle("GET", path, [self](const http::HttpRequest&) {
      http::HttpResponse r;
      r.content_type = std::string(metrics::kPrometheusContentType);
      r.body = self->MetricsText();
      return r;
    }));
  }
  MEMKV_RETURN_IF_ERROR(admin->http_->Start());
  admin->Sample();
  admin->sampler_ = std::thread([self] {
    std::unique_lock<std::mutex> lock(self->mu_);
    while (!self->cv_.wait_for(lock, std::chrono::milliseconds(self->options_.sample_interval_ms),
                               [self] { return self->stopping_; })) {
      lock.unlock();
      self->Sample();
      lock.lock();
    }
  });
  return admin;
}

AdminService::~AdminService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
  if (http_ != nullptr) http_->Stop();
}

uint64_t AdminService::RequestsTotal() const {
  uint64_t total = 0;
  for (const OpMetrics& op : sources_.metrics->ops) total += op.requests.Value();
  return total;
}

void AdminService::Sample() {
  const uint64_t total = RequestsTotal();
  std::lock_guard<std::mutex> lock(mu_);
  samples_.emplace_back(MonotonicNanos(), total);
  if (samples_.size() > kRateSamples) samples_.erase(samples_.begin());
}

double AdminService::OpsPerSecond() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (samples_.size() < 2) return 0;
  const auto& [t0, n0] = samples_.front();
  const auto& [t1, n1] = samples_.back();
  return t1 > t0 ? double(n1 - n0) / Seconds(t1 - t0) : 0;
}

HealthReport AdminService::Health() const {
  HealthReport h;
  h.rdma_active = sources_.rdma != nullptr;
  std::vector<std::string> offline;
  const std::optional<drive::ExtentStoreStats> drives = sources_.tier->DrivesStats();
  if (drives) {
    for (const drive::DriveStats& d : drives->drives) {
      ++h.drives_total;
      if (d.state == drive::DriveState::kOffline) {
        ++h.drives_offline;
        offline.push_back("drive " + std::to_string(d.index) + (d.path.empty() ? "" : " (" + d.path + ")") +
                          ": " + d.reason);
      } else {
        ++h.drives_online;
      }
    }
  }
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
  };
  if (drives && h.drives_online == 0) {
    h.status = "unhealthy";
    h.reason = "no drive is online: " + join(offline);
  } else if (sources_.serving && !sources_.serving()) {
    h.status = "unhealthy";
    h.reason = "the server is not serving (starting or draining)";
  } else if (h.drives_offline > 0) {
    h.status = "degraded";
    h.reason = std::to_string(h.drives_offline) + " of " + std::to_string(h.drives_total) +
               " drives offline, their values are misses: " + join(offline);
  } else {
    h.status = "healthy";
  }
  return h;
}

namespace {

void WriteHealth(JsonWriter& w, const HealthReport& h) {
  w.BeginObject()
      .Key("status").String(h.status)
      .Key("reason").String(h.reason)
      .Key("rdma_active").Bool(h.rdma_active)
      .Key("drives_online").Number(uint64_t(h.drives_online))
      .Key("drives_offline").Number(uint64_t(h.drives_offline))
      .Key("drives_total").Number(uint64_t(h.drives_total))
      .EndObject();
}

}  // namespace

std::string AdminService::HealthJson() const {
  JsonWriter w;
  WriteHealth(w, Health());
  return w.text();
}

std::string AdminService::StatusJson() const {
  const storage::MemoryStoreStats mem = sources_.tier->MemoryStats();
  const tier::TierCounters tier = sources_.tier->Counters();
  const ServerMetrics& m = *sources_.metrics;
  JsonWriter w;
  w.BeginObject();
  w.Key("version").String(sources_.version);
  w.Key("address").String(sources_.data_address);
  w.Key("uptime_seconds").Number(Seconds(MonotonicNanos() - started_));
  w.Key("health");
  WriteHealth(w, Health());

  // Devices: the DRAM pool, then each drive.
  uint64_t raw = mem.pool_bytes, usable = mem.pool_bytes, used = mem.used_bytes;
  w.Key("devices").BeginArray();
  w.BeginObject()
      .Key("name").String("dram")
      .Key("kind").String("memory")
      .Key("state").String("online")
      .Key("raw_bytes").Number(mem.pool_bytes)
      .Key("usable_bytes").Number(mem.pool_bytes)
      .Key("used_bytes").Number(mem.used_bytes)
      .EndObject();
  const std::optional<drive::ExtentStoreStats> drive_stats = sources_.tier->DrivesStats();
  const drive::ExtentStoreStats drives = drive_stats.value_or(drive::ExtentStoreStats());
  if (drive_stats) {
    raw = usable = used = 0;  // the drives are the capacity; DRAM is their cache
    for (const drive::DriveStats& d : drives.drives) {
      raw += d.raw_bytes;
      usable += d.usable_bytes;
      used += d.used_bytes;
      w.BeginObject()
          .Key("name").String("drive" + std::to_string(d.index))
          .Key("kind").String(sources_.storage_mode)
          .Key("path").String(d.path)
          .Key("state").String(drive::DriveStateName(d.state))
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
  }
  w.EndArray();
  w.Key("raw_bytes_total").Number(raw);
  w.Key("usable_bytes_total").Number(usable);
  w.Key("used_bytes_total").Number(used);

  w.Key("memory").BeginObject()
      .Key("pool_bytes").Number(mem.pool_bytes)
      .Key("block_size_bytes").Number(mem.block_size_bytes)
      .Key("used_bytes").Number(mem.used_bytes)
      .Key("value_bytes").Number(mem.value_bytes)
      .Key("free_bytes").Number(mem.free_bytes)
      .Key("largest_free_bytes").Number(mem.largest_free_bytes)
      .Key("fragmentation").Number(mem.fragmentation())
      .Key("bytes_per_value_byte").Number(mem.bytes_per_value_byte())
      .Key("keys").Number(mem.keys)
      .Key("hits").Number(mem.hits)
      .Key("misses").Number(mem.misses)
      .Key("evictions").Number(mem.evictions)
      .Key("checksum_failures").Number(mem.checksum_failures)
      .Key("sent_value_checks").Number(mem.later_checks)
      .Key("sent_value_checks_skipped").Number(mem.later_checks_skipped)
      .Key("pages").String(storage::PageKindName(mem.page_kind))
      .EndObject();

  w.Key("storage").BeginObject().Key("mode").String(sources_.storage_mode);
  if (drive_stats) {
    w.Key("io_engine").String(drives.io_engine)
        .Key("block_size_bytes").Number(drives.block_size_bytes)
        .Key("degraded").Bool(drives.degraded)
        .Key("usable_bytes").Number(drives.usable_bytes())
        .Key("used_bytes").Number(drives.used_bytes())
        .Key("value_bytes").Number(drives.value_bytes)
        .Key("free_bytes").Number(drives.free_bytes())
        .Key("largest_free_bytes").Number(drives.largest_free_bytes())
        .Key("fragmentation").Number(drives.fragmentation())
        .Key("bytes_per_value_byte").Number(drives.bytes_per_value_byte())
        .Key("keys").Number(drives.keys)
        .Key("journal_live_bytes").Number(drives.journal_live_bytes)
        .Key("journal_budget_bytes").Number(drives.journal_budget_bytes)
        .Key("sync").String(drive::SyncModeName(drives.sync))
        .Key("drive_hits").Number(tier.drive_hits)
        .Key("promotions").Number(tier.promotions)
        .Key("evictions").Number(tier.drive_evictions)
        .Key("write_failures").Number(tier.write_failures)
        .Key("checksum_failures").Number(drives.checksum_failures)
        .Key("io_errors").Number(drives.io_errors)
        .Key("restart_seconds").Number(Seconds(Nanos(drives.open_nanos)));
  }
  w.EndObject();

  w.Key("rdma").BeginObject().Key("active").Bool(sources_.rdma != nullptr);
  if (sources_.rdma != nullptr) w.Key("path").String(sources_.rdma->Describe());
  w.Key("connections").Number(m.rdma_connections.Value())
      .Key("refused").Number(m.rdma_refused.Value())
      .Key("put_bytes").Number(m.rdma_put_bytes.Value())
      .Key("get_bytes").Number(m.rdma_get_bytes.Value())
      .Key("leases_expired").Number(m.rdma_leases_expired.Value())
      .EndObject();

  w.Key("connections").BeginObject()
      .Key("active").Number(int64_t(m.connections_active.load(std::memory_order_relaxed)))
      .Key("total").Number(m.connections_accepted.Value())
      .EndObject();

  const uint64_t gets = mem.hits + mem.misses;
  w.Key("requests_total").Number(RequestsTotal());
  w.Key("ops_per_second").Number(OpsPerSecond());
  w.Key("hit_ratio").Number(gets == 0 ? 0.0 : double(mem.hits + tier.drive_hits) / double(gets));
  w.EndObject();
  return w.text();
}

std::string AdminService::MetricsText() const {
  using metrics::Labels;
  const ServerMetrics& m = *sources_.metrics;
  const storage::MemoryStoreStats mem = sources_.tier->MemoryStats();
  const tier::TierCounters tier = sources_.tier->Counters();
  metrics::PrometheusWriter p;

  p.AddGauge("memkv_build_info", "The running binary's version.", {{"version", sources_.version}}, 1);
  p.AddGauge("memkv_uptime_seconds", "Seconds since the server started.", {}, Seconds(MonotonicNanos() - started_));
  const HealthReport health = Health();
  for (const char* s : {"healthy", "degraded", "unhealthy"}) {
    p.AddGauge("memkv_health", "1 for the current health status (/v1/health), 0 for the others.", {{"status", s}},
               health.status == s ? 1 : 0);
  }

  for (size_t i = 0; i < kOpSlots; ++i) {
    const OpSlot slot = static_cast<OpSlot>(i);
    const OpMetrics& op = m.ops[i];
    const Labels labels = {{"op", OpSlotName(slot)}, {"transport", OpSlotTransport(slot)}};
    p.AddCounter("memkv_requests_total", "Requests answered, by operation and transport.", labels,
                 op.requests.Value());
    p.AddCounter("memkv_request_errors_total",
                 "Requests answered with an error (a status other than ok or not found).", labels, op.errors.Value());
    p.AddCounter("memkv_value_bytes_total", "Value bytes stored (puts) or served (gets).", labels,
                 op.value_bytes.Value());
    p.AddHistogram("memkv_request_duration_seconds",
                   "From a request's header arriving to its response being queued, drive work included.", labels,
                   op.latency.Snapshot(), metrics::kNanosPerSecond);
  }

  p.AddGauge("memkv_connections_active", "Client connections open now.", {},
             double(m.connections_active.load(std::memory_order_relaxed)));
  p.AddCounter("memkv_connections_accepted_total", "Client connections accepted.", {}, m.connections_accepted.Value());
  p.AddCounter("memkv_accept_failures_total",
               "accept(2) failures for lack of descriptors or memory; each pauses accepts for 100 ms.", {},
               m.accept_failures.Value());
  p.AddCounter("memkv_connections_closed_total", "Connections the server closed, by reason.",
               {{"reason", "handshake_timeout"}}, m.connections_closed_idle.Value());
  p.AddCounter("memkv_connections_closed_total", "Connections the server closed, by reason.",
               {{"reason", "write_stall"}}, m.connections_closed_stalled.Value());
  p.AddCounter("memkv_connections_closed_total", "Connections the server closed, by reason.",
               {{"reason", "frame_timeout"}}, m.connections_closed_frame_timeout.Value());
  p.AddCounter("memkv_connections_closed_total", "Connections the server closed, by reason.",
               {{"reason", "rdma_lease"}}, m.rdma_leases_expired.Value());
  const char* kRefusedHelp =
      "Connections closed at once on accept because a connection limit was reached, by limit "
      "(network.max_connections, network.max_unauthenticated_connections).";
  p.AddCounter("memkv_connections_refused_total", kRefusedHelp, {{"reason", "max_connections"}},
               m.connections_refused_max_connections.Value());
  p.AddCounter("memkv_connections_refused_total", kRefusedHelp, {{"reason", "max_unauthenticated"}},
               m.connections_refused_max_unauthenticated.Value());
  p.AddCounter("memkv_auth_failures_total", "Frames or connections refused for failed authentication.", {},
               m.auth_failures.Value());
  p.AddCounter("memkv_protocol_errors_total", "Malformed frames, unknown opcodes and similar protocol errors.", {},
               m.protocol_errors.Value());
  p.AddCounter("memkv_unsupported_version_total", "Frames of a protocol version this server does not speak.", {},
               m.unsupported_version.Value());
  p.AddCounter("memkv_network_received_bytes_total", "Bytes read from client sockets.", {}, m.bytes_received.Value());
  p.AddCounter("memkv_network_sent_bytes_total", "Bytes written to client sockets.", {}, m.bytes_sent.Value());

  const char* kChecksumHelp = "Values or payloads whose bytes did not match their checksum, by where it was caught.";
  p.AddCounter("memkv_checksum_failures_total", kChecksumHelp, {{"where", "payload"}},
               m.payload_checksum_failures.Value());
  p.AddCounter("memkv_checksum_failures_total", kChecksumHelp, {{"where", "rdma_commit"}},
               m.rdma_commit_checksum_failures.Value());
  p.AddCounter("memkv_checksum_failures_total", kChecksumHelp, {{"where", "dram"}}, mem.checksum_failures);
  const char* kSentCheckHelp =
      "DRAM values sent to a TCP reader (which checks them end to end) and then checked by the server: "
      "hashed, or skipped because the bytes had matched within memory.read_check_interval_ms.";
  p.AddCounter("memkv_sent_value_checks_total", kSentCheckHelp, {{"result", "hashed"}}, mem.later_checks);
  p.AddCounter("memkv_sent_value_checks_total", kSentCheckHelp, {{"result", "skipped_recent"}},
               mem.later_checks_skipped);

  // Cache figures: DRAM hits, drive hits (DRAM misses served by a drive), misses.
  const uint64_t final_misses = mem.misses >= tier.drive_hits ? mem.misses - tier.drive_hits : 0;
  p.AddCounter("memkv_cache_hits_total", "Gets served, by the tier that held the value.", {{"tier", "dram"}},
               mem.hits);
  p.AddCounter("memkv_cache_hits_total", "Gets served, by the tier that held the value.", {{"tier", "drive"}},
               tier.drive_hits);
  p.AddCounter("memkv_cache_misses_total", "Gets of values in no tier.", {}, final_misses);
  p.AddCounter("memkv_evictions_total", "Values evicted to make room, by tier.", {{"tier", "dram"}}, mem.evictions);
  p.AddCounter("memkv_evictions_total", "Values evicted to make room, by tier.", {{"tier", "drive"}},
               tier.drive_evictions);
  p.AddCounter("memkv_promotions_total", "Values read from a drive and copied back into DRAM.", {}, tier.promotions);
  p.AddGauge("memkv_keys", "Values held, by tier.", {{"tier", "dram"}}, double(mem.keys));
  p.AddGauge("memkv_capacity_raw_bytes", "Raw size of each device (the DRAM pool, each drive).",
             {{"device", "dram"}}, double(mem.pool_bytes));
  p.AddGauge("memkv_capacity_usable_bytes", "Bytes of each device that can hold values.", {{"device", "dram"}},
             double(mem.pool_bytes));
  const char* kUsedHelp =
      "Bytes of each device's capacity consumed: values rounded up to the allocation unit, and room reserved "
      "by puts in flight.";
  p.AddGauge("memkv_capacity_used_bytes", kUsedHelp, {{"device", "dram"}}, double(mem.used_bytes));
  const char* kValueBytesHelp = "Bytes of the values held, by tier.";
  const char* kFragmentationHelp =
      "Share of the free bytes outside the longest free run (per drive for the drive tier), by tier: 0 when the "
      "free room is in one piece.";
  p.AddGauge("memkv_stored_value_bytes", kValueBytesHelp, {{"tier", "dram"}}, double(mem.value_bytes));
  p.AddGauge("memkv_fragmentation_ratio", kFragmentationHelp, {{"tier", "dram"}}, mem.fragmentation());
  if (const std::optional<drive::ExtentStoreStats> drive_stats = sources_.tier->DrivesStats()) {
    const drive::ExtentStoreStats& drives = *drive_stats;
    p.AddGauge("memkv_keys", "Values held, by tier.", {{"tier", "drive"}}, double(drives.keys));
    p.AddGauge("memkv_stored_value_bytes", kValueBytesHelp, {{"tier", "drive"}}, double(drives.value_bytes));
    p.AddGauge("memkv_fragmentation_ratio", kFragmentationHelp, {{"tier", "drive"}}, drives.fragmentation());
    for (const drive::DriveStats& d : drives.drives) {
      const std::string device = "drive" + std::to_string(d.index);
      p.AddGauge("memkv_capacity_raw_bytes", "Raw size of each device (the DRAM pool, each drive).",
                 {{"device", device}}, double(d.raw_bytes));
      p.AddGauge("memkv_capacity_usable_bytes", "Bytes of each device that can hold values.", {{"device", device}},
                 double(d.usable_bytes));
      p.AddGauge("memkv_capacity_used_bytes", kUsedHelp, {{"device", device}}, double(d.used_bytes));
      for (drive::DriveState s : {drive::DriveState::kOnline, drive::DriveState::kFull, drive::DriveState::kOffline}) {
        p.AddGauge("memkv_drive_state", "1 for each drive's current state, 0 for the others.",
                   {{"device", device}, {"state", drive::DriveStateName(s)}}, d.state == s ? 1 : 0);
      }
    }
    p.AddCounter("memkv_checksum_failures_total", kChecksumHelp, {{"where", "drive"}}, drives.checksum_failures);
    p.AddCounter("memkv_drive_io_errors_total", "Drive reads, writes and syncs that failed.", {}, drives.io_errors);
    p.AddCounter("memkv_drive_write_failures_total", "Puts the drives refused (full, offline, I/O error).", {},
                 tier.write_failures);
    p.AddCounter("memkv_drive_journal_commits_total", "Journal writes (each may carry several operations).", {},
                 drives.journal_commits);
  }

  p.AddGauge("memkv_rdma_active", "1 when the server accepts RDMA (a device is configured and up).", {},
             sources_.rdma != nullptr ? 1 : 0);
  p.AddCounter("memkv_rdma_connections_total", "RDMA offers at Connect, by result.", {{"result", "accepted"}},
               m.rdma_connections.Value());
  p.AddCounter("memkv_rdma_connections_total", "RDMA offers at Connect, by result.", {{"result", "refused"}},
               m.rdma_refused.Value());
  p.AddCounter("memkv_rdma_bytes_total", "Value bytes clients moved by RDMA, by direction.", {{"direction", "put"}},
               m.rdma_put_bytes.Value());
  p.AddCounter("memkv_rdma_bytes_total", "Value bytes clients moved by RDMA, by direction.", {{"direction", "get"}},
               m.rdma_get_bytes.Value());
  return p.Text();
}

}  // namespace memkv
