// Client::Create and the Client implementation: validation, placement, the
// single-key calls and listing; batches are BatchRunner's (batch_runner.h),
// asynchronous submissions the Driver's (driver.h).
#include "memkv/client.h"

#include <algorithm>
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
  ClientImpl(const ClientOptions& options, Placement placement, std::vector<Endpoint> endpoints,
             const Key32& key, verbs::Provider* provider)
      : options_(options), placement_(std::move(placement)), log_target_(MakeLogTarget(options)) {
    for (Endpoint& endpoint : endpoints) {
      pools_.push_back(std::make_unique<ServerPool>(std::move(endpoint), key, options.num_connections,
                                                    Nanos{options.connect_timeout_ms} * 1'000'000,
                                                    &counters_, &clock_));
    }
    provider_ = provider;
    driver_ = std::make_shared<Driver>([this](BatchJob* job) { RunJob(job); }, options.async_threads);
  }

  // Torn down under the client's log target: closing connections and
  // deregistering memory may log.
  ~ClientImpl() override {
    // First: its threads run jobs on everything below.
    driver_->Shutdown();
    ScopedLogTarget log_scope(&log_target_);
    exporter_.reset();
    pools_.clear();
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
    for (auto& pool : pools_) pool->set_rdma(rdma_.get());
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
      r.body = metrics_.Text(Stats());
      return r;
    };
    MEMKV_RETURN_IF_ERROR((*server)->Handle("GET", "/metrics", text));
    MEMKV_RETURN_IF_ERROR((*server)->Handle("GET", "/v1/metrics", text));
    MEMKV_RETURN_IF_ERROR((*server)->Start());
    exporter_ = std::move(server).value();
    return Status::Ok();
  }

  Status PutImpl(std::string_view key, std::span<const uint8_t> value) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Put"));
    if (Status size = CheckValueSize(value.size()); !size.ok()) {
      return size.WithContext("Put " + KeyForMessage(key));  // built only when needed
    }
    const size_t server = placement_.ServerFor(key);
    if (rdma_ != nullptr) {
      RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kPut, key, placement_.name(server), value);
      RunSingle(server, &x);
      CountTransport(x, value.size());
      return x.status();
    }
    SingleExchange x(proto::Opcode::kPut, key, placement_.name(server), value);
    RunSingle(server, &x);
    if (x.status().ok()) CountTcp(value.size());
    return x.status();
  }

  Result<std::vector<uint8_t>> GetImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Get"));
    const size_t server = placement_.ServerFor(key);
    if (rdma_ != nullptr) {
      RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kGet, key, placement_.name(server));
      RunSingle(server, &x);
      if (!x.status().ok()) return x.status();
      CountTransport(x, x.value_size());
      return std::move(x.value());
    }
    SingleExchange x(proto::Opcode::kGet, key, placement_.name(server));
    RunSingle(server, &x);
    if (!x.status().ok()) return x.status();
    CountTcp(x.value_size());
    return std::move(x.value());
  }

  Result<size_t> GetIntoImpl(std::string_view key, std::span<uint8_t> buffer) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("GetInto"));
    const size_t server = placement_.ServerFor(key);
    if (rdma_ != nullptr) {
      RdmaExchange x(rdma_.get(), &counters_, proto::Opcode::kGet, key, placement_.name(server), {}, buffer);
      RunSingle(server, &x);
      if (!x.status().ok()) return x.status();
      CountTransport(x, x.value_size());
      return static_cast<size_t>(x.value_size());
    }
    SingleExchange x(proto::Opcode::kGet, key, placement_.name(server), {}, buffer);
    RunSingle(server, &x);
    if (!x.status().ok()) return x.status();
    CountTcp(x.value_size());
    return static_cast<size_t>(x.value_size());
  }

  Status DeleteImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Delete"));
    const size_t server = placement_.ServerFor(key);
    SingleExchange x(proto::Opcode::kDelete, key, placement_.name(server));
    RunSingle(server, &x);
    return x.status();
  }

  Result<bool> ExistsImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("Exists"));
    const size_t server = placement_.ServerFor(key);
    SingleExchange x(proto::Opcode::kExists, key, placement_.name(server));
    RunSingle(server, &x);
    if (x.status().ok()) return true;
    if (x.status().code() == StatusCode::kNotFound) return false;
    return x.status();
  }

  Result<uint64_t> ValueSizeImpl(std::string_view key) {
    MEMKV_RETURN_IF_ERROR(proto::CheckKey(key).WithContext("ValueSize"));
    const size_t server = placement_.ServerFor(key);
    SingleExchange x(proto::Opcode::kStat, key, placement_.name(server));
    RunSingle(server, &x);
    if (!x.status().ok()) return x.status();
    return x.value_size();
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
    for (size_t server = 0; server < pools_.size(); ++server) {
      ListExchange x(request, placement_.name(server));
      RunSingle(server, &x);
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

  size_t ServerFor(std::string_view key) const override { return placement_.ServerFor(key); }
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

  void RunSingle(size_t server, Exchange* x) {
    ClientCounters::Add(counters_.ops, 1);
    const Nanos deadline = Deadline();
    auto conns = pools_[server]->Acquire(1, deadline, /*wait=*/true);
    if (!conns.ok()) {
      x->OnFailure(conns.status());
      return;
    }
    Connection* c = conns->front().get();
    c->Enqueue(x);
    DriveConnections(std::span<Connection* const>(&c, 1), deadline);
    pools_[server]->Release(std::move(conns).value());
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
  const Placement placement_;
  const LogTarget log_target_;
  verbs::Provider* provider_ = nullptr;
  std::unique_ptr<RdmaEngine> rdma_;  // null: MEMKV_TRANSPORT=tcp
  SteadyClock clock_;
  ClientCounters counters_;
  std::vector<std::unique_ptr<ServerPool>> pools_;  // one per server, in options_.servers order
  BatchRunner batches_{options_, placement_, pools_, rdma_, counters_};
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

Result<std::unique_ptr<Client>> CreateClientWithVerbs(const ClientOptions& options, verbs::Provider& provider) {
  // Every option against its row of the table (memkv/client.h), naming it.
  MEMKV_RETURN_IF_ERROR(CheckClientOptions(options));
  std::vector<Endpoint> endpoints;
  std::vector<std::string> names;
  std::vector<std::string> ids;  // what keys are placed by: the spelling of a server does not move them
  for (size_t i = 0; i < options.servers.size(); ++i) {
    Result<config::ServerAddress> address = config::ParseServerAddress(options.servers[i]);
    if (!address.ok()) {
      return InvalidArgument("servers[" + std::to_string(i) + "]: " + address.status().message());
    }
    std::string name = address->ToString();
    names.push_back(name);
    ids.push_back(CanonicalServerId(address->host, address->port));
    endpoints.push_back(Endpoint{address->host, address->port, std::move(name)});
  }
  MEMKV_ASSIGN_OR_RETURN(Key32 key, ParseAuthKey(options.auth_key_hex));
  Result<Placement> placement = Placement::Create(std::move(names), ids);
  if (!placement.ok()) return placement.status().WithContext("servers");
  auto client =
      std::make_unique<ClientImpl>(options, std::move(placement).value(), std::move(endpoints), key, &provider);
  MEMKV_RETURN_IF_ERROR(client->StartRdma(options));
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
