// Client::Create and the Client implementation: validation, placement, the
// single-key calls and listing; batches are BatchRunner's (batch_runner.h),
// asynchronous submissions the Driver's (driver.h).
#include "memkv/client.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "base/version.h"
#include "client/access_log.h"
#include "client/connection.h"
#include "client/batch_runner.h"
#include "client/counters.h"
#include "client/driver.h"
#include "base/key_page.h"
#include "client/ops.h"
#include "client/membership.h"
#include "client/placement.h"
#include "client/pool.h"
#include "client/rdma.h"
#include "client/rdma_ops.h"
#include "client/client_from_config.h"
#include "client/client_metrics.h"
#include "http/http_server.h"
#include "metrics/prometheus.h"
#include "config/client_config.h"
#include "proto/messages.h"

namespace memkv::client {
namespace {

constexpr uint32_t kMaxConnectionsPerServer = 256;
// The option table (src/config/client_config.cc) states these ranges.
static_assert(kMaxConnectionsPerServer == 256 && proto::kMaxRdmaQps == 16);
// The protocol's ceiling; each server's own (smaller) limit, announced at
// Connect, is applied by the connection before it sends anything.
Status CheckValueSize(uint64_t size) {
  if (size > proto::kMaxValueBytesCeiling) {
    return TooLarge("value of " + std::to_string(size) + " bytes exceeds the protocol's limit of " +
                    std::to_string(proto::kMaxValueBytesCeiling) + " bytes");
  }
  return Status::Ok();
}


class ClientImpl final : public Client {
 public:
  ClientImpl(const ClientOptions& options, const Key32& key, verbs::Provider* provider)
      : options_(options), auth_key_(key), log_target_(MakeLogTarget(options)) {
    provider_ = provider;
    driver_ = std::make_shared<Driver>([this](BatchJob* job) { RunJob(job); }, options.async_threads);
  }

  // After StartRdma (new servers' pools offer RDMA): resolves the list,
  // asks the servers who they are and starts the refresher (membership.h).
  Status StartMembership(std::vector<config::ServerSource> entries, std::unique_ptr<Resolver> resolver) {
    ScopedLogTarget log_scope(&log_target_);
    Membership::Settings settings;
    settings.entries = std::move(entries);
    settings.discovery_interval_ms = options_.discovery_interval_ms;
    settings.connect_timeout_ms = options_.connect_timeout_ms;
    settings.resolve_timeout_ms = options_.resolve_timeout_ms;
    settings.timeout_ms = options_.timeout_ms;
    settings.rebalance_grace_ms = options_.rebalance_grace_ms;
    auto make_pool = [this](const ResolvedServer& server) {
      return std::make_shared<ServerPool>(Endpoint{server.host, server.port, server.name, identity_text_, OnIdentified()}, auth_key_,
                                          options_.num_connections, Nanos{options_.connect_timeout_ms} * 1'000'000,
                                          &counters_, &clock_, rdma_.get());
    };
    MEMKV_ASSIGN_OR_RETURN(membership_,
                           Membership::Start(std::move(settings), std::move(resolver), make_pool, &counters_));
    return Status::Ok();
  }

  // Torn down under the client's log target: closing connections and
  // deregistering memory may log.
  ~ClientImpl() override {
    // First: its threads run jobs on everything below.
    driver_->Shutdown();
    ScopedLogTarget log_scope(&log_target_);
    StopReporter();
    SendReport();  // what the engine reported since the reporter's last
    exporter_.reset();
    membership_.reset();
    rdma_.reset();
  }

  // The RDMA engine is made after the pools' counters exist (it reports
  // fallbacks into them); the pools then offer RDMA on new connections.
  Status StartRdma(const ClientOptions& options) {
    RdmaSettings settings;
    settings.mode = options.transport == "rdma"  ? config::TransportMode::kRdma
                    : options.transport == "tcp" ? config::TransportMode::kTcp
                                                 : config::TransportMode::kAuto;
    settings.devices = options.rdma_devices;
    settings.mtu = options.rdma_mtu;
    settings.retry_count = static_cast<uint8_t>(options.rdma_retry_count);
    settings.timeout = static_cast<uint8_t>(options.rdma_timeout);
    settings.qps = options.rdma_qps;
    settings.gid_index = options.rdma_gid_index;
    settings.traffic_class = options.rdma_traffic_class;
    settings.service_level = options.rdma_service_level;
    if (settings.mode == config::TransportMode::kTcp) return Status::Ok();
    ScopedLogTarget log_scope(&log_target_);
    MEMKV_ASSIGN_OR_RETURN(rdma_, RdmaEngine::Create(settings, *provider_, &counters_));
    return Status::Ok();
  }

  // The public calls: each is timed and counted (client_metrics.h), then
  // done by its *Impl below.
  Status Put(std::string_view key, std::span<const uint8_t> value) override {
    return Timed(ClientOp::kPut, [&] { return PutImpl(key, value); }, {.keys = {&key, 1}, .values = {&value, 1}});
  }
  Result<std::vector<uint8_t>> Get(std::string_view key) override {
    return Timed(ClientOp::kGet, [&] { return GetImpl(key); }, {.keys = {&key, 1}});
  }
  Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer) override {
    return Timed(ClientOp::kGet, [&] { return GetIntoImpl(key, buffer); }, {.keys = {&key, 1}});
  }
  Status Delete(std::string_view key) override {
    return Timed(ClientOp::kDelete, [&] { return DeleteImpl(key); }, {.keys = {&key, 1}});
  }
  Result<bool> Exists(std::string_view key) override {
    return Timed(ClientOp::kExists, [&] { return ExistsImpl(key); }, {.keys = {&key, 1}});
  }
  Result<uint64_t> ValueSize(std::string_view key) override {
    return Timed(ClientOp::kStat, [&] { return ValueSizeImpl(key); }, {.keys = {&key, 1}});
  }
  // The blocking batches are the asynchronous ones run inline: the same
  // job, on the caller's thread, no handoff.
  BatchResult BatchPut(std::span<const std::string_view> keys,
                       std::span<const std::span<const uint8_t>> values) override {
    BatchJob job = Job(AsyncOp::kPut, keys);
    job.values = values;
    RunJob(&job);
    return ResultOf(std::move(job.completion));
  }
  // A put with options travels as a one-item BatchPutWith.
  Status PutWith(std::string_view key, std::span<const uint8_t> value, const PutOptions& options) override {
    if (options.empty()) return Put(key, value);
    return Timed(ClientOp::kPut, [&] {
      const std::string_view keys[] = {key};
      const std::span<const uint8_t> values[] = {value};
      BatchResult r = batches_.Put(keys, values, std::span<const PutOptions>(&options, 1));
      return r.statuses.front();
    }, {.keys = {&key, 1}, .values = {&value, 1}});
  }
  BatchResult BatchPutWith(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                           std::span<const PutOptions> options) override {
    BatchJob job = Job(AsyncOp::kPut, keys);
    job.values = values;
    job.options = options;
    RunJob(&job);
    return ResultOf(std::move(job.completion));
  }
  Result<size_t> MatchPrefix(std::span<const std::string_view> keys) override {
    return Timed(ClientOp::kMatchPrefix, [&] { return batches_.MatchPrefix(keys); }, {.keys = keys});
  }
  BatchResult BatchGetInto(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                           std::vector<size_t>* sizes) override {
    BatchJob job = Job(AsyncOp::kGet, keys);
    job.buffers = buffers;
    RunJob(&job);
    if (sizes != nullptr) *sizes = std::move(job.completion.sizes);
    return ResultOf(std::move(job.completion));
  }
  BatchResult BatchExists(std::span<const std::string_view> keys) override {
    BatchJob job = Job(AsyncOp::kExists, keys);
    RunJob(&job);
    return ResultOf(std::move(job.completion));
  }
  BatchResult BatchDelete(std::span<const std::string_view> keys) override {
    BatchJob job = Job(AsyncOp::kDelete, keys);
    RunJob(&job);
    return ResultOf(std::move(job.completion));
  }

  Result<std::unique_ptr<AsyncQueue>> NewAsyncQueue() override {
    MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<QueueCore> core, QueueCore::Create());
    return std::unique_ptr<AsyncQueue>(std::make_unique<DriverQueue>(driver_, std::move(core)));
  }

  // Runs one batch, timed and counted (client_metrics.h), on whichever
  // thread calls: the blocking calls' own, or a driver thread. A batch
  // delete counts as one delete.
  void RunJob(BatchJob* job) {
    AsyncCompletion& c = job->completion;
    BatchResult result;
    switch (job->op) {
      case AsyncOp::kGet:
        metrics_.RecordBatch(ClientOp::kBatchGet, job->keys.size());
        result = Timed(ClientOp::kBatchGet, [&] { return batches_.GetInto(job->keys, job->buffers, &c.sizes); },
                       {.keys = job->keys, .sizes = &c.sizes});
        break;
      case AsyncOp::kPut:
        metrics_.RecordBatch(ClientOp::kBatchPut, job->keys.size());
        result = Timed(ClientOp::kBatchPut, [&] { return batches_.Put(job->keys, job->values, job->options); },
                       {.keys = job->keys, .values = job->values});
        break;
      case AsyncOp::kExists:
        metrics_.RecordBatch(ClientOp::kBatchExists, job->keys.size());
        result = Timed(ClientOp::kBatchExists, [&] { return batches_.Exists(job->keys); }, {.keys = job->keys});
        break;
      case AsyncOp::kDelete:
        result = Timed(ClientOp::kDelete, [&] { return batches_.Delete(job->keys); }, {.keys = job->keys});
        break;
    }
    c.statuses = std::move(result.statuses);
    c.present_prefix = result.present_prefix;
  }

  static BatchJob Job(AsyncOp op, std::span<const std::string_view> keys) {
    BatchJob job;
    job.op = op;
    job.keys = keys;
    return job;
  }

  static BatchResult ResultOf(AsyncCompletion&& c) {
    BatchResult result;
    result.statuses = std::move(c.statuses);
    result.present_prefix = c.present_prefix;
    return result;
  }

  Result<KeyListPage> ListKeys(std::string_view prefix, std::string_view cursor, size_t page_size) override {
    return Timed(ClientOp::kList, [&] { return ListKeysImpl(prefix, cursor, page_size); });
  }

  // Opens ClientOptions::access_log_path (docs/client-library.md, "Access
  // log"). The identity is the client's own; the tenant is the server's
  // word for the auth key, set with SetAccessLogContext once known.
  Status StartAccessLog() {
    AccessLogSettings settings;
    settings.path = options_.access_log_path;
    settings.sample = options_.access_log_sample;
    settings.max_lines_per_sec = options_.access_log_max_lines_per_sec;
    settings.log_target = &log_target_;
    MEMKV_ASSIGN_OR_RETURN(access_log_, AccessLog::Open(settings));
    if (!options_.identity.empty()) access_log_->SetContext("", options_.identity.Tag());
    return Status::Ok();
  }
  // The tenant and identity tag the access log's lines carry from now on.
  // What a pool's connections call when the server answered the client's
  // Identify: the access log learns the tenant (once; every server of a
  // fleet shares the keys, so names the same tenant).
  std::function<void(const std::string&)> OnIdentified() {
    if (access_log_ == nullptr || identity_text_.empty()) return nullptr;
    return [this](const std::string& tenant) {
      if (!tenant_known_.exchange(true, std::memory_order_acq_rel)) SetAccessLogContext(tenant, identity_tag_);
    };
  }

  void SetAccessLogContext(std::string tenant, std::string identity) {
    if (access_log_ != nullptr) access_log_->SetContext(std::move(tenant), std::move(identity));
  }

  // Serves GET /metrics on `bind` (MEMKV_PROMETHEUS_BIND) until destroyed.
  Status StartExporter(const std::string& bind) {
    MEMKV_ASSIGN_OR_RETURN(config::ServerAddress address, config::ParseServerAddress(bind));
    http::HttpServerOptions http;
    http.host = address.host;
    http.port = address.port;
    http.log_target = &log_target_;
    Result<std::unique_ptr<http::HttpServer>> server = http::HttpServer::Create(http);
    if (!server.ok()) return server.status().WithContext("MEMKV_PROMETHEUS_BIND " + bind);
    auto text = [this](const http::HttpRequest&) {
      http::HttpResponse r;
      r.content_type = std::string(metrics::kPrometheusContentType);
      r.body = metrics_.Text(Stats(), Servers(), access_log_ ? access_log_->Counts() : AccessLogCounts{});
      return r;
    };
    MEMKV_RETURN_IF_ERROR((*server)->Handle("GET", "/metrics", text));
    MEMKV_RETURN_IF_ERROR((*server)->Handle("GET", "/v1/metrics", text));
    MEMKV_RETURN_IF_ERROR((*server)->Start());
    exporter_ = std::move(server).value();
    return Status::Ok();
  }

  // The single-key calls: each takes the current view once and routes the
  // key along its rendezvous order (Router::Route, membership.h).
  Status PutImpl(std::string_view key, std::span<const uint8_t> value) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Put"));
    if (Status size = CheckValueSize(value.size()); !size.ok()) {
      return size.WithContext("Put " + KeyForMessage(key));  // built only when needed
    }
    StoreTicket ticket(&batches_.stores(), "Put", 1);  // shed, rather than wait, while the tier is slow
    if (!ticket.status().ok()) return ticket.status();
    return OnRoute(key, Purpose::kWrite, [&](const View& view, size_t server) {
      if (rdma_ != nullptr) {
        RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kPut, key, view.placement->name(server), value);
        RunSingle(view, server, &x, ServerPool::Use::kStore);
        CountTransport(x, value.size());
        return x.status();
      }
      SingleExchange x(proto::Opcode::kPut, key, view.placement->name(server), value);
      RunSingle(view, server, &x, ServerPool::Use::kStore);
      if (x.status().ok()) CountTcp(value.size());
      return x.status();
    });
  }

  Result<std::vector<uint8_t>> GetImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Get"));
    std::vector<uint8_t> value;
    MEMKV_RETURN_IF_ERROR(OnRoute(key, Purpose::kRead, [&](const View& view, size_t server) {
      if (rdma_ != nullptr) {
        RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kGet, key, view.placement->name(server));
        RunSingle(view, server, &x);
        if (!x.status().ok()) return x.status();
        CountTransport(x, x.value_size());
        value = std::move(x.value());
        return Status::Ok();
      }
      SingleExchange x(proto::Opcode::kGet, key, view.placement->name(server));
      RunSingle(view, server, &x);
      if (!x.status().ok()) return x.status();
      CountTcp(x.value_size());
      value = std::move(x.value());
      return Status::Ok();
    }));
    return value;
  }

  Result<size_t> GetIntoImpl(std::string_view key, std::span<uint8_t> buffer) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("GetInto"));
    uint64_t size = 0;
    MEMKV_RETURN_IF_ERROR(OnRoute(key, Purpose::kRead, [&](const View& view, size_t server) {
      if (rdma_ != nullptr) {
        RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kGet, key, view.placement->name(server), {}, buffer);
        RunSingle(view, server, &x);
        if (!x.status().ok()) return x.status();
        CountTransport(x, x.value_size());
        size = x.value_size();
        return Status::Ok();
      }
      SingleExchange x(proto::Opcode::kGet, key, view.placement->name(server), {}, buffer);
      RunSingle(view, server, &x);
      if (!x.status().ok()) return x.status();
      CountTcp(x.value_size());
      size = x.value_size();
      return Status::Ok();
    }));
    return static_cast<size_t>(size);
  }

  // Delete, Exists and Stat carry only the key.
  Status KeyOnly(proto::Opcode opcode, std::string_view key, Purpose purpose, uint64_t* value_size = nullptr) {
    return OnRoute(key, purpose, [&](const View& view, size_t server) {
      SingleExchange x(opcode, key, view.placement->name(server));
      RunSingle(view, server, &x);
      if (x.status().ok() && value_size != nullptr) *value_size = x.value_size();
      return x.status();
    });
  }

  Status DeleteImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Delete"));
    return KeyOnly(proto::Opcode::kDelete, key, Purpose::kDelete);
  }

  Result<bool> ExistsImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Exists"));
    Status s = KeyOnly(proto::Opcode::kExists, key, Purpose::kRead);
    if (s.ok()) return true;
    if (s.code() == StatusCode::kNotFound) return false;
    return s;
  }

  Result<uint64_t> ValueSizeImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("ValueSize"));
    uint64_t size = 0;
    MEMKV_RETURN_IF_ERROR(KeyOnly(proto::Opcode::kStat, key, Purpose::kRead, &size));
    return size;
  }

  // Asks every server for a page and merges them: the keys are complete up
  // to the smallest last key of the servers that have more, so the page is
  // cut there (and at page_size).
  Result<KeyListPage> ListKeysImpl(std::string_view prefix, std::string_view cursor, size_t page_size) {
    if (page_size == 0 || page_size > proto::kMaxBatchItems) {
      return InvalidArgument("ListKeys: page_size " + std::to_string(page_size) + " is out of range; allowed: 1.." +
                             std::to_string(proto::kMaxBatchItems));
    }
    for (auto [name, part] : {std::pair{"prefix", prefix}, std::pair{"cursor", cursor}}) {
      if (part.size() > proto::kMaxKeyBytes) {
        return InvalidArgument(std::string("ListKeys: ") + name + " of " + std::to_string(part.size()) +
                               " bytes is longer than a key can be (" + std::to_string(proto::kMaxKeyBytes) + ")");
      }
    }
    const proto::ListRequest request{.prefix = prefix, .after = cursor, .limit = static_cast<uint32_t>(page_size)};
    KeyPage merged("", "", page_size);
    std::optional<std::string> bound;  // keys past it may be missing from some server's page
    bool more = false;
    std::shared_ptr<const View> view = membership_->RefreshIfEmpty();
    if (!view->placement) return view->Unavailable();
    for (size_t server = 0; server < view->pools.size(); ++server) {
      // A server that is down holds no key a listing could promise; its
      // keys are misses until it is back.
      if (view->pools[server]->Down()) continue;
      ListExchange x(request, view->placement->name(server));
      RunSingle(*view, server, &x);
      if (!x.status().ok()) return x.status();
      if (x.more()) {
        more = true;
        if (!bound || x.keys().back() < *bound) bound = x.keys().back();
      }
      for (const std::string& key : x.keys()) {
        if (!bound || key <= *bound) merged.Offer(key);
      }
    }
    KeyListPage page;
    page.keys = merged.Take();
    if (bound) std::erase_if(page.keys, [&](const std::string& k) { return k > *bound; });
    if ((more || merged.more()) && !page.keys.empty()) page.next_cursor = page.keys.back();
    return page;
  }

  size_t ServerFor(std::string_view key) const override {
    std::shared_ptr<const View> view = membership_->Current();
    if (!view->placement) return 0;
    return view->member_of[view->placement->ServerFor(key)];
  }
  std::vector<ServerView> Servers() const override { return membership_->Servers(); }
  Status RegisterMemory(std::span<uint8_t> region) override {
    if (rdma_ == nullptr) return Status::Ok();
    ScopedLogTarget log_scope(&log_target_);
    return rdma_->Pin(region.data(), region.size());
  }

  Status UnregisterMemory(void* base) override {
    if (rdma_ == nullptr) return Status::Ok();
    ScopedLogTarget log_scope(&log_target_);
    return rdma_->Unpin(base);
  }

  ClientStats Stats() const override {
    ClientStats stats = counters_.Snapshot();
    stats.transport = rdma_ != nullptr && rdma_->active() ? "rdma" : "tcp";
    stats.rdma_state = rdma_ == nullptr     ? "off"
                       : rdma_->active()    ? "active"
                       : rdma_->no_device() ? "no_device"
                                            : "fallback";
    return stats;
  }

 private:
  static bool Failed(const Status& s) { return !s.ok() && s.code() != StatusCode::kNotFound; }
  template <typename T>
  static bool Failed(const Result<T>& r) { return Failed(r.status()); }
  static bool Failed(const BatchResult& r) {
    return std::any_of(r.statuses.begin(), r.statuses.end(), [](const Status& s) { return Failed(s); });
  }
  // Runs `call`, recording its latency and outcome under the transport in
  // use when it began, and its sampled keys in the access log
  // (access_log.h) when there is one.
  template <typename F>
  std::invoke_result_t<F> Timed(ClientOp op, F call, const AccessKeys& access = {}) {
    ScopedLogTarget log_scope(&log_target_);
    const bool rdma = rdma_ != nullptr && rdma_->active();
    const int64_t wall_us = access_log_ != nullptr ? AccessNowMicros() : 0;
    const Nanos start = MonotonicNanos();
    auto result = call();
    const Nanos latency = MonotonicNanos() - start;
    metrics_.Record(op, rdma, latency, Failed(result));
    CountLookups(op, access.keys.size(), result);
    if (op == ClientOp::kPut || op == ClientOp::kBatchPut) ReportShedStores();
    if (access_log_ != nullptr) LogCall(*access_log_, ClientOpName(op), access, result, wall_us, latency);
    return result;
  }

  // The hit-rate split (lookups, found, fetched) of one finished call.
  template <typename R>
  void CountLookups(ClientOp op, size_t keys, const R& result) {
    uint64_t found = 0;
    bool fetch = false;
    if constexpr (std::is_same_v<R, BatchResult>) {
      if (op != ClientOp::kBatchGet && op != ClientOp::kBatchExists) return;
      for (const Status& s : result.statuses) found += s.ok() ? 1 : 0;
      fetch = op == ClientOp::kBatchGet;
    } else if constexpr (!std::is_same_v<R, Status>) {
      using T = std::decay_t<decltype(*result)>;
      if (op == ClientOp::kGet) {
        found = result.ok() ? 1 : 0;
        fetch = true;
      } else if (op == ClientOp::kExists) {
        if constexpr (std::is_same_v<T, bool>) found = result.ok() && *result ? 1 : 0;
      } else if (op == ClientOp::kMatchPrefix) {
        if constexpr (std::is_integral_v<T>) found = result.ok() ? static_cast<uint64_t>(*result) : 0;
      } else {
        return;
      }
    } else {
      return;
    }
    ClientCounters::Add(counters_.lookups, keys);
    if (found > 0) ClientCounters::Add(counters_.found, found);
    if (fetch && found > 0) ClientCounters::Add(counters_.fetched, found);
  }

 public:
  std::string IdentityTag() const override { return identity_tag_; }

  void ReportRestores(uint64_t in_time, uint64_t late) override {
    ClientCounters::Add(counters_.fetched_in_time, in_time);
    ClientCounters::Add(counters_.fetched_late, late);
    MutexLock lock(report_mu_);
    unreported_.fetched_in_time += in_time;
    unreported_.fetched_late += late;
    StartReporterLocked();
  }

  // After a put: stores shed since start the reporter too, so that an
  // engine that restores nothing still reports its shed stores.
  void ReportShedStores() {
    const uint64_t shed = counters_.stores_shed.load(std::memory_order_relaxed);
    if (shed == shed_noted_.exchange(shed, std::memory_order_relaxed)) return;
    MutexLock lock(report_mu_);
    StartReporterLocked();
  }

 private:
  // The reporter: one thread (memkv-report), started by the first restore
  // or shed store there is to report, sends what is unreported once a
  // second, and the destructor sends the rest; the engine's own calls never
  // wait on a report.
  void StartReporterLocked() MEMKV_REQUIRES(report_mu_) {
    if (reporter_.joinable() || reporter_stop_) return;
    reporter_ = std::thread([this] {
      SetThreadName("memkv-report");
      MutexLock lock(report_mu_);
      while (!reporter_stop_) {
        lock.WaitFor(report_cv_, std::chrono::seconds(1));
        if (reporter_stop_) break;
        lock.Unlock();
        SendReport();
        lock.Lock();
      }
    });
  }

  void StopReporter() {
    {
      MutexLock lock(report_mu_);
      reporter_stop_ = true;
    }
    report_cv_.notify_all();
    if (reporter_.joinable()) reporter_.join();
  }

  // Sends what is unreported (restores, and stores shed since the last
  // report) to the first server that takes it; kept for the next report
  // when none does.
  void SendReport() {
    proto::ClientReport report;
    {
      MutexLock lock(report_mu_);
      const uint64_t shed = counters_.stores_shed.load(std::memory_order_relaxed);
      report = unreported_;
      report.stores_shed = shed - shed_reported_;
      unreported_ = proto::ClientReport();
      shed_reported_ = shed;
    }
    if (report.empty() || membership_ == nullptr) return;
    std::shared_ptr<const View> view = membership_->Current();
    const Nanos deadline = Deadline();
    for (const std::shared_ptr<ServerPool>& pool : view->pools) {
      auto conns = pool->Acquire(1, deadline, /*wait=*/false);
      if (!conns.ok() || conns->empty()) continue;
      ReportExchange x(report);
      Connection* c = conns->front().get();
      c->Enqueue(&x);
      DriveConnections(std::span<Connection* const>(&c, 1), deadline);
      pool->Release(std::move(conns).value());
      if (x.status().ok()) return;
    }
    MutexLock lock(report_mu_);
    unreported_.fetched_in_time += report.fetched_in_time;
    unreported_.fetched_late += report.fetched_late;
    shed_reported_ -= report.stores_shed;
  }

  void CountTcp(uint64_t bytes) { client::CountTcp(counters_, bytes); }
  void CountTransport(const RdmaExchange& x, uint64_t bytes) { client::CountTransport(counters_, x, bytes); }

  Nanos Deadline() const { return MonotonicNanos() + Nanos{options_.timeout_ms} * 1'000'000; }

  // Runs `attempt(view, server)` for `key` along its rendezvous order in
  // the current view; Unavailable naming every server when none is placed.
  template <typename Attempt>
  Status OnRoute(std::string_view key, Purpose purpose, Attempt attempt) {
    std::shared_ptr<const View> view = membership_->RefreshIfEmpty();
    if (!view->placement) return view->Unavailable();
    Router router(*view, membership_->grace_nanos());
    return router.Route(key, purpose, counters_, [&](size_t server) { return attempt(*view, server); });
  }

  // `use`: kStore for a put, which leaves loads a connection (pool.h).
  void RunSingle(const View& view, size_t server, Exchange* x, ServerPool::Use use = ServerPool::Use::kLoad) {
    ClientCounters::Add(counters_.ops, 1);
    const Nanos deadline = Deadline();
    ServerPool& pool = *view.pools[server];
    auto conns = pool.Acquire(1, deadline, /*wait=*/true, use);
    if (!conns.ok()) {
      x->OnFailure(conns.status());
      return;
    }
    Connection* c = conns->front().get();
    c->Enqueue(x);
    DriveConnections(std::span<Connection* const>(&c, 1), deadline);
    pool.Release(std::move(conns).value(), use);
  }

  // The client's own log threshold and sink (ClientOptions::log_level and
  // log_callback), installed on the calling thread by every public call.
  static LogTarget MakeLogTarget(const ClientOptions& options) {
    LogTarget target;
    target.level = static_cast<LogLevel>(options.log_level);
    if (options.log_callback) {
      target.sink = [callback = options.log_callback](LogLevel level, std::string_view component,
                                                      std::string_view message) {
        callback(static_cast<ClientLogLevel>(level), component, message);
      };
    }
    return target;
  }

  const ClientOptions options_;
  // The cache identity's canonical text (sent on each connection) and tag.
  const std::string identity_text_ = options_.identity.empty() ? "" : options_.identity.Canonical();
  const std::string identity_tag_ = options_.identity.empty() ? "" : options_.identity.Tag();
  // Restores and shed stores not yet reported to a server (ReportRestores).
  Mutex report_mu_;
  proto::ClientReport unreported_ MEMKV_GUARDED_BY(report_mu_);
  uint64_t shed_reported_ MEMKV_GUARDED_BY(report_mu_) = 0;
  std::condition_variable report_cv_;
  bool reporter_stop_ MEMKV_GUARDED_BY(report_mu_) = false;
  std::thread reporter_;  // started and joined under report_mu_'s rules above
  std::atomic<bool> tenant_known_{false};
  std::atomic<uint64_t> shed_noted_{0};  // stores_shed when a put last looked (ReportShedStores)  // the access log has its tenant
  const Key32 auth_key_;
  const LogTarget log_target_;
  verbs::Provider* provider_ = nullptr;
  std::unique_ptr<RdmaEngine> rdma_;  // null: MEMKV_TRANSPORT=tcp
  SteadyClock clock_;
  ClientCounters counters_;
  // The servers and their pools (membership.h); made after rdma_.
  std::unique_ptr<Membership> membership_;
  BatchRunner batches_{options_, membership_, rdma_, counters_};
  ClientMetrics metrics_;
  std::unique_ptr<AccessLog> access_log_;  // null: access_log_path empty
  // Runs the asynchronous submissions; shut down first by the destructor.
  std::shared_ptr<Driver> driver_;
  // Last: stopped first, as its handler reads the members above.
  std::unique_ptr<http::HttpServer> exporter_;
};

Result<Key32> ParseAuthKey(const std::string& hex) {
  const std::string rule = "auth_key must be 64 hex characters (a 32-byte key)";
  if (hex.size() != 64) return InvalidArgument(rule + ", got " + std::to_string(hex.size()) + " characters");
  std::optional<std::vector<uint8_t>> bytes = HexDecode(hex);
  if (!bytes) return InvalidArgument(rule + "; it contains a non-hex character");
  Key32 key{};
  std::copy(bytes->begin(), bytes->end(), key.begin());
  return key;
}

}  // namespace

Result<std::unique_ptr<Client>> CreateClientWithVerbs(const ClientOptions& options, verbs::Provider& provider,
                                                      const ResolverFactory& resolvers) {
  // Every option against its row of the table (memkv/client.h), naming it.
  MEMKV_RETURN_IF_ERROR(CheckClientOptions(options));
  std::vector<config::ServerSource> entries;
  for (size_t i = 0; i < options.servers.size(); ++i) {
    Result<config::ServerSource> source = config::ParseServerSource(options.servers[i]);
    if (!source.ok()) {
      return InvalidArgument("servers[" + std::to_string(i) + "]: " + source.status().message());
    }
    entries.push_back(std::move(source).value());
  }
  // Two spellings of one address ("localhost:9900", "127.0.0.1:9900") are
  // one server listed twice: refused, as a server placed by its address
  // would otherwise be its own duplicate.
  std::map<std::string, std::string> spelled;  // canonical address -> entry
  for (const config::ServerSource& e : entries) {
    if (e.kind != config::ServerSource::Kind::kAddress) continue;
    const std::string id = CanonicalServerId(e.host, e.port);
    auto [at, inserted] = spelled.emplace(id, e.text);
    if (!inserted) {
      return InvalidArgument("servers: server '" + e.text + "' is listed twice (as '" + at->second + "', both " +
                             id + "); list each server once");
    }
  }
  MEMKV_ASSIGN_OR_RETURN(Key32 key, ParseAuthKey(options.auth_key_hex));
  Result<std::unique_ptr<Resolver>> resolver =
      resolvers ? resolvers(options.dns_server) : Resolver::Create(options.dns_server);
  if (!resolver.ok()) return resolver.status().WithContext("dns_server");
  auto client = std::make_unique<ClientImpl>(options, key, &provider);
  MEMKV_RETURN_IF_ERROR(client->StartRdma(options));
  // The access log first: the pools' connections tell it the tenant.
  if (!options.access_log_path.empty()) MEMKV_RETURN_IF_ERROR(client->StartAccessLog());
  MEMKV_RETURN_IF_ERROR(client->StartMembership(std::move(entries), std::move(resolver).value()));
  if (!options.prometheus_bind.empty()) MEMKV_RETURN_IF_ERROR(client->StartExporter(options.prometheus_bind));
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace memkv::client

// The public API of memkv/client.h.
namespace memkv {

std::string_view LibraryVersion() { return kMemkvVersion; }

static_assert(static_cast<int>(ClientLogLevel::kDebug) == static_cast<int>(LogLevel::kDebug) &&
              static_cast<int>(ClientLogLevel::kWarn) == static_cast<int>(LogLevel::kWarn) &&
              static_cast<int>(ClientLogLevel::kOff) == static_cast<int>(LogLevel::kOff));

std::string_view ClientLogLevelName(ClientLogLevel level) {
  switch (level) {
    case ClientLogLevel::kDebug: return "debug";
    case ClientLogLevel::kInfo: return "info";
    case ClientLogLevel::kWarn: return "warn";
    case ClientLogLevel::kError: return "error";
    case ClientLogLevel::kOff: return "off";
  }
  return "unknown";
}

Result<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  return client::CreateClientWithVerbs(options, verbs::SystemProvider());
}

}  // namespace memkv
