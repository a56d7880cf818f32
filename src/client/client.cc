// Client::Create and the Client implementation: validation, placement, the
// single-key calls and listing; batches are BatchRunner's (batch_runner.h),
// asynchronous submissions the Driver's (driver.h).
#include "memkv/client.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/version.h"
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
      return std::make_shared<ServerPool>(Endpoint{server.host, server.port, server.name}, auth_key_,
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
    return Timed(ClientOp::kPut, [&] { return PutImpl(key, value); });
  }
  Result<std::vector<uint8_t>> Get(std::string_view key) override {
    return Timed(ClientOp::kGet, [&] { return GetImpl(key); });
  }
  Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer) override {
    return Timed(ClientOp::kGet, [&] { return GetIntoImpl(key, buffer); });
  }
  Status Delete(std::string_view key) override {
    return Timed(ClientOp::kDelete, [&] { return DeleteImpl(key); });
  }
  Result<bool> Exists(std::string_view key) override {
    return Timed(ClientOp::kExists, [&] { return ExistsImpl(key); });
  }
  Result<uint64_t> ValueSize(std::string_view key) override {
    return Timed(ClientOp::kStat, [&] { return ValueSizeImpl(key); });
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
    });
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
    return Timed(ClientOp::kMatchPrefix, [&] { return batches_.MatchPrefix(keys); });
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
        result = Timed(ClientOp::kBatchGet, [&] { return batches_.GetInto(job->keys, job->buffers, &c.sizes); });
        break;
      case AsyncOp::kPut:
        metrics_.RecordBatch(ClientOp::kBatchPut, job->keys.size());
        result = Timed(ClientOp::kBatchPut, [&] { return batches_.Put(job->keys, job->values, job->options); });
        break;
      case AsyncOp::kExists:
        metrics_.RecordBatch(ClientOp::kBatchExists, job->keys.size());
        result = Timed(ClientOp::kBatchExists, [&] { return batches_.Exists(job->keys); });
        break;
      case AsyncOp::kDelete:
        result = Timed(ClientOp::kDelete, [&] { return batches_.Delete(job->keys); });
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
      r.body = metrics_.Text(Stats(), Servers());
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
    return OnRoute(key, Purpose::kWrite, [&](const View& view, size_t server) {
      if (rdma_ != nullptr) {
        RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kPut, key, view.placement->name(server), value);
        RunSingle(view, server, &x);
        CountTransport(x, value.size());
        return x.status();
      }
      SingleExchange x(proto::Opcode::kPut, key, view.placement->name(server), value);
      RunSingle(view, server, &x);
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
  // use when it began.
  template <typename F>
  std::invoke_result_t<F> Timed(ClientOp op, F call) {
    ScopedLogTarget log_scope(&log_target_);
    const bool rdma = rdma_ != nullptr && rdma_->active();
    const Nanos start = MonotonicNanos();
    auto result = call();
    metrics_.Record(op, rdma, MonotonicNanos() - start, Failed(result));
    return result;
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

  void RunSingle(const View& view, size_t server, Exchange* x) {
    ClientCounters::Add(counters_.ops, 1);
    const Nanos deadline = Deadline();
    ServerPool& pool = *view.pools[server];
    auto conns = pool.Acquire(1, deadline, /*wait=*/true);
    if (!conns.ok()) {
      x->OnFailure(conns.status());
      return;
    }
    Connection* c = conns->front().get();
    c->Enqueue(x);
    DriveConnections(std::span<Connection* const>(&c, 1), deadline);
    pool.Release(std::move(conns).value());
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
