#include "server/admin.h"

#include <algorithm>
#include <string>

#include "base/json.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "http/tls_context.h"
#include "metrics/prometheus.h"
#include "server/metrics_table.h"

namespace memkv::server {
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

std::string JsonError(std::string_view message) {
  JsonWriter w;
  w.BeginObject();
  w.Key("error");
  w.String(message);
  w.EndObject();
  return w.text();
}

}  // namespace

AdminService::AdminService(const AdminOptions& options, const AdminSources& sources)
    : options_(options), sources_(sources), started_(MonotonicNanos()) {
  auth_.SetKey(options.admin_key);
  options_.admin_key.clear();
}

http::HttpHandler AdminService::RequireSigned(http::HttpHandler handler) {
  return [this, handler = std::move(handler)](const http::HttpRequest& request) {
    const std::string path = request.query.empty() ? request.path : request.path + "?" + request.query;
    AdminAuthenticator::Verdict v =
        auth_.Check(request.method, path, request.Header("authorization"), request.body, UnixMillis());
    if (v.ok()) return handler(request);
    if (sources_.metrics != nullptr) sources_.metrics->admin_auth_failures[static_cast<size_t>(*v.failure)].Add(1);
    LOG_WARN_EVERY_C("admin", 10) << "refused " << request.method << " " << request.path << " from " << request.peer
                                  << " (" << AdminAuthFailureName(*v.failure) << "): " << v.message;
    http::HttpResponse r = Json(v.http_status, JsonError(v.message));
    if (v.http_status == 401) r.headers.push_back({"WWW-Authenticate", std::string(kAdminAuthScheme)});
    return r;
  };
}

Result<std::unique_ptr<AdminService>> AdminService::Start(const AdminOptions& options,
                                                          const AdminSources& sources) {
  std::unique_ptr<AdminService> admin(new AdminService(options, sources));
  http::HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.tls_cert_path = options.tls_cert_path;
  http.tls_key_path = options.tls_key_path;
  http.tls = http::CreateOpenSslServer;
  http.max_body_bytes = kAdminMaxBodyBytes;
  http.read_timeout_ms = kAdminRequestTimeoutMs;
  MEMKV_ASSIGN_OR_RETURN(admin->http_, http::HttpServer::Create(http));
  AdminService* self = admin.get();
  MEMKV_RETURN_IF_ERROR(admin->http_->Handle("GET", "/v1/health", [self](const http::HttpRequest&) {
    const bool unhealthy = self->Health().status == "unhealthy";
    return Json(unhealthy ? 503 : 200, self->HealthJson());
  }));
  MEMKV_RETURN_IF_ERROR(admin->http_->Handle("GET", "/v1/ready", [self](const http::HttpRequest&) {
    const bool serving = self->sources_.serving && self->sources_.serving();
    if (serving && self->sources_.fleet != nullptr && self->sources_.fleet->draining()) {
      return http::HttpResponse::Text(503, "draining\n");
    }
    return http::HttpResponse::Text(serving ? 200 : 503, serving ? "ok\n" : "not serving (starting or stopping)\n");
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
  MEMKV_RETURN_IF_ERROR(admin->http_->Handle(
      "POST", "/v1/admin/reload", admin->RequireSigned([self](const http::HttpRequest&) {
        if (!self->sources_.reload) {
          return Json(409, JsonError("reload needs a config file: this server was started without one "
                                     "(memkv start --config FILE)"));
        }
        Result<std::string> report = self->sources_.reload();
        if (!report.ok()) return Json(500, JsonError("reload failed: " + report.status().message()));
        return Json(200, *report);
      })));
  if (sources.fleet != nullptr) {
    MEMKV_RETURN_IF_ERROR(admin->http_->Handle(
        "POST", "/v1/admin/drain",
        admin->RequireSigned([self](const http::HttpRequest& r) { return self->SetDraining(true, r); })));
    MEMKV_RETURN_IF_ERROR(admin->http_->Handle(
        "POST", "/v1/admin/undrain",
        admin->RequireSigned([self](const http::HttpRequest& r) { return self->SetDraining(false, r); })));
  }
  MEMKV_RETURN_IF_ERROR(admin->http_->Start());
  admin->Sample();
  admin->sampler_ = std::thread([self] {
    SetThreadName("memkv-sampler");
    MutexLock lock(self->mu_);
    while (!lock.WaitFor(self->cv_, std::chrono::milliseconds(self->options_.sample_interval_ms),
                         [&]() MEMKV_REQUIRES(self->mu_) { return self->stopping_; })) {
      lock.Unlock();
      self->Sample();
      lock.Lock();
    }
  });
  return admin;
}

AdminService::~AdminService() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
  if (http_ != nullptr) http_->Stop();
}

http::HttpResponse AdminService::SetDraining(bool draining, const http::HttpRequest& request) {
  FleetState& fleet = *sources_.fleet;
  const bool was = fleet.SetDraining(draining);
  if (was != draining) {
    LOG_INFO_C("admin") << "server " << fleet.id() << " at " << fleet.address()
                        << (draining ? ": draining (puts answered Draining; gets, deletes and lists served) by "
                                     : ": serving again (undrained) by ")
                        << request.peer;
  }
  JsonWriter w;
  w.BeginObject();
  w.Key("state");
  w.String(draining ? "draining" : "serving");
  w.Key("server_id");
  w.String(fleet.id());
  w.EndObject();
  return Json(200, w.text());
}

uint64_t AdminService::RequestsTotal() const {
  uint64_t total = 0;
  for (const OpMetrics& op : sources_.metrics->ops) total += op.requests.Value();
  return total;
}

void AdminService::Sample() {
  const uint64_t total = RequestsTotal();
  MutexLock lock(mu_);
  samples_.emplace_back(MonotonicNanos(), total);
  if (samples_.size() > kRateSamples) samples_.erase(samples_.begin());
}

double AdminService::OpsPerSecond() const {
  MutexLock lock(mu_);
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
    h.reason = "the server is not serving (starting or stopping)";
  } else if (h.drives_offline > 0) {
    h.status = "degraded";
    h.reason = std::to_string(h.drives_offline) + " of " + std::to_string(h.drives_total) +
               " drives offline, their values are misses: " + join(offline);
  } else {
    h.status = "healthy";
  }
  return h;
}

std::string AdminService::HealthJson() const {
  JsonWriter w;
  WriteHealthJson(w, Health());
  return w.text();
}

ServerSnapshot AdminService::Snapshot() const {
  ServerSnapshot s;
  s.metrics = sources_.metrics;
  if (sources_.namespaces != nullptr) s.namespaces = sources_.namespaces->Snapshot();
  if (sources_.identities != nullptr) {
    s.identities = sources_.identities->Snapshot();
    s.identity_info = sources_.identities->Known();
  }
  const std::shared_ptr<const TenantMap> map = sources_.tier->Tenants();
  std::vector<TenantCountsRow> requests;
  if (sources_.tenants != nullptr) requests = sources_.tenants->Snapshot();
  if (!requests.empty() || !map->empty()) {
    s.tenants = JoinTenantRows(std::move(requests), *map, sources_.tier->TenantUsages());
  }
  s.memory = sources_.tier->MemoryStats();
  s.tier = sources_.tier->Counters();
  s.drives = sources_.tier->DrivesStats();
  if (sources_.events != nullptr) s.events = sources_.events->counters();
  s.health = Health();
  s.admin_http = http_->stats();
  s.version = sources_.version;
  s.address = sources_.data_address;
  s.storage_mode = sources_.storage_mode;
  s.uptime_seconds = Seconds(MonotonicNanos() - started_);
  s.rdma_active = sources_.rdma != nullptr;
  if (s.rdma_active) s.rdma_path = sources_.rdma->Describe();
  s.requests_total = RequestsTotal();
  s.ops_per_second = OpsPerSecond();
  s.fleet = sources_.fleet;
  return s;
}

std::string AdminService::StatusJson() const { return ServerStatusJson(Snapshot()); }

std::string AdminService::MetricsText() const { return ServerMetricsText(Snapshot()); }

}  // namespace memkv::server
