// Client::Create and the Client implementation: validation, placement, and
// fanning calls out over the server pools.
#include "memkv/client.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/version.h"
#include "client/connection.h"
#include "client/counters.h"
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

namespace memkv {
namespace {

using client::BatchCall;
using client::BatchExchange;
using client::ClientCounters;
using client::ClientMetrics;
using client::ClientOp;
using client::Connection;
using client::Endpoint;
using client::Placement;
using client::RdmaEngine;
using client::RdmaExchange;
using client::ServerPool;
using client::SingleExchange;

constexpr uint32_t kMaxConnectionsPerServer = 256;
// The option table (src/config/client_config.cc) states these ranges.
static_assert(kMaxConnectionsPerServer == 256 && proto::kMaxRdmaQps == 16);
// A server's share of a batch is spread over several connections (so several
// server threads) once it carries this many bytes per connection.
constexpr uint64_t kSpreadBytesPerFrame = 1 << 20;

// The protocol's ceiling; each server's own (smaller) limit, announced at
// Connect, is applied by the connection before it sends anything.
Status CheckValueSize(uint64_t size) {
  if (size > proto::kMaxValueBytesCeiling) {
    return TooLarge("value of " + std::to_string(size) + " bytes exceeds the protocol's limit of " +
                    std::to_string(proto::kMaxValueBytesCeiling) + " bytes");
  }
  return Status::Ok();
}

// A batch frame carries at most kMaxPayloadBytes; a larger value travels
// alone (Put, Get).
Status CheckBatchValueSize(uint64_t size) {
  if (size > proto::kMaxPayloadBytes) {
    return TooLarge("value of " + std::to_string(size) + " bytes exceeds a batch frame's payload limit of " +
                    std::to_string(proto::kMaxPayloadBytes) + " bytes; put it on its own");
  }
  return Status::Ok();
}

// Splits one server's share of a batch into frames: at most kMaxBatchItems
// items and kMaxPayloadBytes of values each (`bytes_of(i)` is what item i
// adds to the frame's payload), and into up to `spread` frames of similar
// size when there are enough bytes to keep several connections busy.
template <typename BytesOf>
std::vector<std::vector<uint32_t>> SplitFrames(const std::vector<uint32_t>& items, uint32_t spread,
                                               BytesOf bytes_of) {
  uint64_t total = 0;
  for (uint32_t i : items) total += bytes_of(i);
  const uint64_t wanted_frames = std::clamp<uint64_t>(total / kSpreadBytesPerFrame, 1, spread);
  const uint64_t soft_bytes = wanted_frames > 1 ? (total + wanted_frames - 1) / wanted_frames : UINT64_MAX;
  std::vector<std::vector<uint32_t>> frames(1);
  uint64_t bytes = 0;
  for (uint32_t i : items) {
    const uint64_t b = bytes_of(i);
    std::vector<uint32_t>& cur = frames.back();
    if (!cur.empty() && (cur.size() >= proto::kMaxBatchItems || bytes + b > proto::kMaxPayloadBytes ||
                         bytes >= soft_bytes)) {
      frames.emplace_back();
      bytes = 0;
    }
    frames.back().push_back(i);
    bytes += b;
  }
  return frames;
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
  }

  // Torn down under the client's log target: closing connections and
  // deregistering memory may log.
  ~ClientImpl() override {
    ScopedLogTarget log_scope(&log_target_);
    exporter_.reset();
    pools_.clear();
    rdma_.reset();
  }

  // The RDMA engine is made after the pools' counters exist (it reports
  // fallbacks into them); the pools then offer RDMA on new connections.
  Status StartRdma(const ClientOptions& options) {
    client::RdmaSettings settings;
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
  BatchResult BatchPut(std::span<const std::string_view> keys,
                       std::span<const std::span<const uint8_t>> values) override {
    metrics_.RecordBatch(ClientOp::kBatchPut, keys.size());
    return Timed(ClientOp::kBatchPut, [&] { return BatchPutImpl(keys, values); });
  }
  BatchResult BatchGetInto(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                           std::vector<size_t>* sizes) override {
    metrics_.RecordBatch(ClientOp::kBatchGet, keys.size());
    return Timed(ClientOp::kBatchGet, [&] { return BatchGetIntoImpl(keys, buffers, sizes); });
  }
  BatchResult BatchExists(std::span<const std::string_view> keys) override {
    metrics_.RecordBatch(ClientOp::kBatchExists, keys.size());
    return Timed(ClientOp::kBatchExists, [&] { return BatchExistsImpl(keys); });
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
      return size.WithContext("Put " + client::KeyForMessage(key));  // built only when needed
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

  BatchResult BatchPutImpl(std::span<const std::string_view> keys,
                           std::span<const std::span<const uint8_t>> values) {
    BatchResult result;
    BatchCall call;
    call.opcode = proto::Opcode::kBatchPut;
    call.keys = keys;
    call.values = values;
    call.statuses = &result.statuses;
    if (keys.size() != values.size()) {
      return Mismatch("BatchPut", keys.size(), "values", values.size());
    }
    // A key named more than once: only its last item is sent, and every item
    // of that key gets its status. Sent together, the items could travel in
    // different frames and land in either order.
    std::vector<size_t> last = LastOccurrences(keys);
    bool repeated = false;
    for (size_t i = 0; i < keys.size(); ++i) repeated = repeated || last[i] != i;
    if (!repeated) {
      RunBatch(&call, [&](size_t i) { return values[i].size(); });
      return Finish(std::move(result));
    }
    std::vector<std::string_view> unique_keys;
    std::vector<std::span<const uint8_t>> unique_values;
    std::vector<size_t> position(keys.size());  // item i's last occurrence, in the unique lists
    for (size_t i = 0; i < keys.size(); ++i) {
      if (last[i] != i) continue;
      position[i] = unique_keys.size();
      unique_keys.push_back(keys[i]);
      unique_values.push_back(values[i]);
    }
    BatchResult unique = BatchPutImpl(unique_keys, unique_values);
    for (size_t i = 0; i < keys.size(); ++i) result.statuses.push_back(unique.statuses[position[last[i]]]);
    return Finish(std::move(result));
  }

  // For each key, the index of the last item naming the same key.
  static std::vector<size_t> LastOccurrences(std::span<const std::string_view> keys) {
    std::unordered_map<std::string_view, size_t> last_of;
    last_of.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) last_of[keys[i]] = i;
    std::vector<size_t> last(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) last[i] = last_of[keys[i]];
    return last;
  }

  BatchResult BatchGetIntoImpl(std::span<const std::string_view> keys,
                               std::span<const std::span<uint8_t>> buffers, std::vector<size_t>* sizes) {
    BatchResult result;
    if (sizes != nullptr) sizes->assign(keys.size(), 0);
    BatchCall call;
    call.opcode = proto::Opcode::kBatchGet;
    call.keys = keys;
    call.buffers = buffers;
    call.statuses = &result.statuses;
    call.sizes = sizes;
    if (keys.size() != buffers.size()) {
      return Mismatch("BatchGetInto", keys.size(), "buffers", buffers.size());
    }
    // A response carries at most kMaxPayloadBytes, so frames are sized by the
    // room the caller gave each value.
    RunBatch(&call, [&](size_t i) {
      return std::min<uint64_t>(buffers[i].size(), proto::kMaxPayloadBytes);
    });
    return Finish(std::move(result));
  }

  BatchResult BatchExistsImpl(std::span<const std::string_view> keys) {
    BatchResult result;
    BatchCall call;
    call.opcode = proto::Opcode::kBatchExists;
    call.keys = keys;
    call.statuses = &result.statuses;
    RunBatch(&call, [](size_t) { return uint64_t{0}; });
    return Finish(std::move(result));
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
      client::ListExchange x(request, placement_.name(server));
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

  // One server's share of a batch: the connections checked out for it.
  struct Lease {
    size_t server;
    std::vector<std::unique_ptr<Connection>> conns;
  };

  void CountTcp(uint64_t bytes) {
    ClientCounters::Add(counters_.tcp_ops, 1);
    ClientCounters::Add(counters_.tcp_bytes, bytes);
  }

  void CountTransport(const RdmaExchange& x, uint64_t bytes) {
    if (!x.status().ok()) return;
    if (x.carried_by_rdma()) {
      ClientCounters::Add(counters_.rdma_ops, 1);
      ClientCounters::Add(counters_.rdma_bytes, bytes);
      if (x.zero_copy()) ClientCounters::Add(counters_.rdma_zero_copy_ops, 1);
    } else {
      CountTcp(bytes);
    }
  }

  Nanos Deadline() const { return MonotonicNanos() + Nanos{options_.timeout_ms} * 1'000'000; }

  void RunSingle(size_t server, client::Exchange* x) {
    ClientCounters::Add(counters_.ops, 1);
    const Nanos deadline = Deadline();
    auto conns = pools_[server]->Acquire(1, deadline, /*wait=*/true);
    if (!conns.ok()) {
      x->OnFailure(conns.status());
      return;
    }
    Connection* c = conns->front().get();
    c->Enqueue(x);
    client::DriveConnections(std::span<Connection* const>(&c, 1), deadline);
    pools_[server]->Release(std::move(conns).value());
  }

  // Validates the keys (and values), groups them by server, splits each
  // group into frames, and runs them (RunGroups).
  template <typename BytesOf>
  void RunBatch(BatchCall* call, BytesOf bytes_of) {
    const size_t n = call->keys.size();
    // Every item is answered below; the placeholder carries no message so
    // that filling it costs no allocation per key (NameUnprocessed).
    call->statuses->assign(n, Status(StatusCode::kInternal, std::string()));
    ClientCounters::Add(counters_.ops, n);
    std::vector<std::vector<uint32_t>> groups(pools_.size());
    for (size_t i = 0; i < n; ++i) {
      Status valid = proto::CheckKey(call->keys[i]);
      if (valid.ok() && call->opcode == proto::Opcode::kBatchPut) valid = CheckBatchValueSize(call->values[i].size());
      if (!valid.ok()) {
        (*call->statuses)[i] = valid.WithContext(std::string(BatchOpName(call)) + " item " + std::to_string(i));
        continue;
      }
      groups[placement_.ServerFor(call->keys[i])].push_back(static_cast<uint32_t>(i));
    }
    std::vector<std::vector<std::vector<uint32_t>>> frames(pools_.size());
    const bool rdma = rdma_ != nullptr && rdma_->active() && call->opcode != proto::Opcode::kBatchExists;
    for (size_t server = 0; server < groups.size(); ++server) {
      if (groups[server].empty()) continue;
      if (rdma) {
        // Over RDMA every value is its own pipelined RdmaPut / RdmaGet.
        for (uint32_t i : groups[server]) frames[server].push_back({i});
      } else {
        frames[server] = SplitFrames(groups[server], options_.num_connections, bytes_of);
      }
    }
    if (!rdma) {
      std::vector<std::unique_ptr<client::Exchange>> keep;
      RunGroups(call, groups, frames, &keep, [&](std::vector<uint32_t> items, size_t server) {
        return std::make_unique<BatchExchange>(call, std::move(items), placement_.name(server));
      });
      if (call->opcode != proto::Opcode::kBatchExists) CountTcpBatch(call);
      NameUnprocessed(call);
      return;
    }
    std::vector<RdmaExchange*> by_key(n, nullptr);
    std::vector<std::unique_ptr<client::Exchange>> keep;  // read after the run
    RunGroups(call, groups, frames, &keep, [&](std::vector<uint32_t> items, size_t server) {
      const uint32_t i = items.front();
      std::unique_ptr<RdmaExchange> x;
      if (call->opcode == proto::Opcode::kBatchPut) {
        x = std::make_unique<RdmaExchange>(rdma_.get(), &counters_, proto::Opcode::kPut, call->keys[i],
                                           placement_.name(server), call->values[i]);
      } else {
        x = std::make_unique<RdmaExchange>(rdma_.get(), &counters_, proto::Opcode::kGet, call->keys[i],
                                           placement_.name(server), std::span<const uint8_t>(), call->buffers[i]);
      }
      by_key[i] = x.get();
      return x;
    });
    for (size_t i = 0; i < n; ++i) {
      RdmaExchange* x = by_key[i];
      if (x == nullptr) continue;  // invalid key, or its server's pool failed: status already set
      const uint64_t bytes = call->opcode == proto::Opcode::kBatchPut ? call->values[i].size() : x->value_size();
      Status s = x->status();
      if (s.code() == StatusCode::kNotFound) s = NotFound("not found");
      (*call->statuses)[i] = s;
      if (s.ok() && call->sizes != nullptr) (*call->sizes)[i] = static_cast<size_t>(x->value_size());
      CountTransport(*x, bytes);
    }
    NameUnprocessed(call);
  }

  // Items still at RunBatch's placeholder (none, unless the client has a bug).
  static void NameUnprocessed(BatchCall* call) {
    for (Status& s : *call->statuses) {
      if (s.code() == StatusCode::kInternal && s.message().empty()) s = Internal("key was not processed (client bug)");
    }
  }

  void CountTcpBatch(const BatchCall* call) {
    for (size_t i = 0; i < call->keys.size(); ++i) {
      if (!(*call->statuses)[i].ok()) continue;
      CountTcp(call->opcode == proto::Opcode::kBatchPut ? call->values[i].size()
                                                        : (call->sizes != nullptr ? (*call->sizes)[i] : 0));
    }
  }

  // Sends each server's frames spread over that server's connections, in
  // rounds: a round checks out what it can of every server left without
  // waiting, and drives those servers together in one poll loop, handing
  // each server's connections back as soon as its part is done. Only when
  // every server left is busy does the call wait, for one of them, holding
  // no connection at all. So a call never sits on a server's connection
  // while it waits for another server (a stalled server costs its own keys
  // their deadline and nobody else's calls a connection), and calls cannot
  // wait on each other in a cycle.
  // `make(items, server)` builds the exchange carrying one frame's items;
  // they are kept in `exchanges`, which must outlive the run.
  template <typename Make>
  void RunGroups(BatchCall* call, const std::vector<std::vector<uint32_t>>& groups,
                 std::vector<std::vector<std::vector<uint32_t>>>& frames,
                 std::vector<std::unique_ptr<client::Exchange>>* kept, Make make) {
    const Nanos deadline = Deadline();
    std::vector<std::unique_ptr<client::Exchange>>& exchanges = *kept;
    std::vector<size_t> todo;  // servers not yet leased or failed
    for (size_t server = 0; server < groups.size(); ++server) {
      if (!groups[server].empty()) todo.push_back(server);
    }
    // Checks out `server`'s connections and queues its frames on them; false
    // when its pool is busy (only without `wait`). A failure is final: its
    // keys' statuses say why.
    std::vector<Lease> leases;
    auto take = [&](size_t server, bool wait) {
      std::vector<std::vector<uint32_t>>& server_frames = frames[server];
      auto conns = pools_[server]->Acquire(std::min<size_t>(server_frames.size(), options_.num_connections),
                                           deadline, wait);
      if (!conns.ok()) {
        for (uint32_t i : groups[server]) {
          (*call->statuses)[i] = conns.status().WithContext(std::string(BatchOpName(call)) + " key " +
                                                            client::KeyForMessage(call->keys[i]));
        }
        return true;
      }
      if (conns->empty()) return false;
      for (size_t f = 0; f < server_frames.size(); ++f) {
        exchanges.push_back(make(std::move(server_frames[f]), server));
        (*conns)[f % conns->size()]->Enqueue(exchanges.back().get());
      }
      leases.push_back(Lease{server, std::move(conns).value()});
      return true;
    };
    while (!todo.empty()) {
      leases.clear();
      std::vector<size_t> busy;
      for (size_t server : todo) {
        if (!take(server, /*wait=*/false)) busy.push_back(server);
      }
      if (leases.empty() && !busy.empty()) {
        // Everything left is busy and nothing is held: wait for the first,
        // then take whatever of the others freed up meanwhile.
        std::vector<size_t> still_busy;
        for (size_t k = 0; k < busy.size(); ++k) {
          if (!take(busy[k], /*wait=*/k == 0)) still_busy.push_back(busy[k]);
        }
        busy = std::move(still_busy);
      }
      DriveAndRelease(leases, deadline);
      todo = std::move(busy);  // each round settles at least one server
    }
  }

  // Drives every leased connection in one poll loop, releasing each
  // server's connections to its pool as soon as all of them are done.
  void DriveAndRelease(std::vector<Lease>& leases, Nanos deadline) {
    std::vector<Connection*> driven;
    std::vector<size_t> lease_of;              // per driven connection
    std::vector<size_t> working(leases.size());  // per lease: connections not done
    for (size_t l = 0; l < leases.size(); ++l) {
      for (auto& c : leases[l].conns) {
        driven.push_back(c.get());
        lease_of.push_back(l);
      }
      working[l] = leases[l].conns.size();
    }
    client::DriveConnections(driven, deadline, [&](size_t i) {
      Lease& lease = leases[lease_of[i]];
      if (--working[lease_of[i]] == 0) pools_[lease.server]->Release(std::move(lease.conns));
    });
  }

  static const char* BatchOpName(const BatchCall* call) {
    return call->opcode == proto::Opcode::kBatchPut   ? "BatchPut"
           : call->opcode == proto::Opcode::kBatchGet ? "BatchGetInto"
                                                      : "BatchExists";
  }

  static BatchResult Mismatch(const char* op, size_t keys, const char* what, size_t count) {
    BatchResult result;
    result.statuses.assign(keys, InvalidArgument(std::string(op) + ": " + std::to_string(keys) +
                                                 " keys but " + std::to_string(count) + " " + what));
    return result;
  }

  static BatchResult Finish(BatchResult result) {
    while (result.present_prefix < result.statuses.size() && result.statuses[result.present_prefix].ok()) {
      ++result.present_prefix;
    }
    return result;
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
  ClientMetrics metrics_;
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
  return CreateClientWithVerbs(options, verbs::SystemProvider());
}

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
    ids.push_back(client::CanonicalServerId(address->host, address->port));
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

}  // namespace memkv
