// AdminService: the admin HTTP endpoint (docs/admin.md) on the data IP, port + 1.
//
//   GET /v1/health   JSON {status, reason, rdma_active, drives_online,
//                    drives_offline, drives_total}; status healthy, degraded
//                    (some drive offline) or unhealthy (no drive left in a
//                    drive mode, or the server is stopping); 503 when unhealthy
//   GET /v1/ready    "ok" (200) while serving; 503 while starting or stopping,
//                    and 503 "draining" while draining (below)
//   GET /v1/status   JSON: memory, storage and RDMA figures, raw / usable /
//                    used bytes in total and per device, connections, request
//                    totals, hit ratio and ops/s (docs/admin.md)
//   GET /v1/metrics  Prometheus text (docs/metrics.md)
//   POST /v1/admin/reload  signed (below): AdminSources::reload's JSON report;
//                    409 without a config file, 500 when the reload failed
//   POST /v1/admin/drain, /v1/admin/undrain  signed: sets or clears
//                    draining (FleetState); JSON {state, server_id}. While
//                    draining /v1/ready answers 503 "draining"; health is
//                    unchanged (draining is not a failure)
//
// Every state-changing route is signed with the administrator key
// (server/admin_auth.h, docs/admin.md "Authentication"): RequireSigned wraps
// its handler, which runs only for a request that passed the check; refusals
// are 401 (429 while the nonce set is full) with a JSON error, counted in
// ServerMetrics::admin_auth_failures. Request bodies over kAdminMaxBodyBytes
// are answered 413 before they are read. The read-only routes stay open.
//
// Connections: at most 64 at once; a request (TLS handshake included) must
// be complete within kAdminRequestTimeoutMs of accept, else 408. A new
// connection that finds all 64 taken closes the oldest one without a
// complete request (src/http/http_server.h), so idle or trickling clients,
// which need no credentials to connect, cannot keep /v1/health and /v1/ready
// from answering; counted in memkv_admin_connections_shed_total.
//
// HTTPS when network.tls_cert and tls_key are set. The HTTP server runs on its
// own thread (src/http): a slow or hostile admin client never touches the
// data plane, whose figures it only reads (relaxed atomics, store stats).
//
// Thread-safety: the renderers may be called from any thread; the service's
// own thread calls them per request. Every source must outlive the service.
#ifndef MEMKV_SERVER_ADMIN_H_
#define MEMKV_SERVER_ADMIN_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "events/publisher.h"
#include "http/http_server.h"
#include "memkv/status.h"
#include "server/admin_auth.h"
#include "server/fleet.h"
#include "server/identities.h"
#include "server/metrics.h"
#include "server/namespace_stats.h"
#include "server/tenant_stats.h"
#include "server/rdma_endpoint.h"
#include "tier/tiered_store.h"

namespace memkv::server {

struct ServerSnapshot;  // server/metrics_table.h

// From accept to a complete request head: probes and curl send theirs at
// once; a client that sends nothing is closed after this.
inline constexpr uint32_t kAdminRequestTimeoutMs = 2000;

struct AdminSources {
  ServerMetrics* metrics = nullptr;
  NamespaceStats* namespaces = nullptr;  // null: no per-namespace counts
  Identities* identities = nullptr;      // null: no per-identity counts
  TenantStats* tenants = nullptr;        // null: no per-tenant request counts
  tier::TieredStore* tier = nullptr;     // the memory pool, and the drives when it has them
  RdmaEndpoint* rdma = nullptr;          // null: TCP only
  const events::Publisher* events = nullptr;  // null: block events off
  std::string storage_mode;              // "memory", "file", "direct"
  std::string version;
  std::string data_address;              // "HOST:PORT" of the data listener
  // True while the data listener serves (false before Run and while draining).
  std::function<bool()> serving;
  // Re-reads credentials and tenants from the config file (Daemon::Reload):
  // the JSON report on success. Null: reload is not available (no config
  // file), answered 409.
  std::function<Result<std::string>()> reload;
  // Identity and draining (docs/fleet.md); null: no drain routes, no fleet
  // fields in /v1/status.
  FleetState* fleet = nullptr;
};

struct AdminOptions {
  std::string host;
  uint16_t port = 0;                     // 0: any free port
  std::string tls_cert_path;
  std::string tls_key_path;
  uint32_t sample_interval_ms = 1000;    // ops/s is the rate over the last 10 samples
  // The administrator key (network.auth_key or the data directory's key
  // file, 32 bytes) that signed requests are checked against; empty: every
  // signed route answers 401. Replaced at run time with SetAdminKey.
  std::vector<uint8_t> admin_key;
};

struct HealthReport {
  std::string status;                    // "healthy", "degraded", "unhealthy"
  std::string reason;                    // empty when healthy
  bool rdma_active = false;
  uint32_t drives_online = 0;            // online or full (still readable)
  uint32_t drives_offline = 0;
  uint32_t drives_total = 0;
};

class AdminService {
 public:
  // Binds (the port is known on return) and starts serving. Errors name the
  // address (bind) or the TLS file and OpenSSL's reason.
  static Result<std::unique_ptr<AdminService>> Start(const AdminOptions& options, const AdminSources& sources);
  ~AdminService();  // stops the HTTP server and the sampler
  AdminService(const AdminService&) = delete;
  AdminService& operator=(const AdminService&) = delete;

  uint16_t port() const { return http_->port(); }
  std::string_view scheme() const { return http_->scheme(); }

  // Replaces the administrator key (a reload that rotated
  // network.auth_key); requests checked afterwards use the new one. Any
  // thread.
  void SetAdminKey(std::span<const uint8_t> admin_key) { auth_.SetKey(admin_key); }

  // Wraps the handler of a state-changing route: it runs only for a request
  // signed with the administrator key; any other is refused (and counted).
  http::HttpHandler RequireSigned(http::HttpHandler handler);

  HealthReport Health() const;
  std::string HealthJson() const;
  std::string StatusJson() const;
  std::string MetricsText() const;

 private:
  // The drain routes' answer: {"state":"draining"|"serving","server_id":...}.
  http::HttpResponse SetDraining(bool draining, const http::HttpRequest& request);

  AdminService(const AdminOptions& options, const AdminSources& sources);
  // Every source read once, for the tables of server/metrics_table.h.
  ServerSnapshot Snapshot() const;
  uint64_t RequestsTotal() const;
  double OpsPerSecond() const;
  void Sample();

  AdminOptions options_;
  AdminSources sources_;
  Nanos started_ = 0;
  std::unique_ptr<http::HttpServer> http_;
  AdminAuthenticator auth_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ MEMKV_GUARDED_BY(mu_) = false;
  std::vector<std::pair<Nanos, uint64_t>> samples_ MEMKV_GUARDED_BY(mu_);  // (time, requests), oldest first
  std::thread sampler_;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_ADMIN_H_
