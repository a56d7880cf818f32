// ClientMetrics: what a client process exposes for Prometheus when
// MEMKV_PROMETHEUS_BIND (ClientOptions::prometheus_bind) is set: per call
// latency histograms, requests and errors by operation and by the transport
// in use when the call began, batch sizes, timeouts, RDMA fallbacks and
// completion errors by ibv_wc_status (docs/metrics.md, "Client").
//
// Recording is lock-free (the sharded cells of src/metrics), so application
// threads calling the client never contend on a lock to be counted. The
// exporter is an HttpServer of its own (GET /metrics) started by
// Client::Create; it only reads.
//
// What the exporter writes is ClientMetricTable(): one row per Prometheus
// family (name, type, labels, HELP, how to read it from a ClientScrape);
// docs/metrics.md's "Client" table lists the same families (client_test
// checks both ways). Adding a client metric: its cell (here, or a counter in
// counters.h read through ClientStats), the increment where it happens, one
// row in client_metrics.cc and its line in docs/metrics.md.
//
// Thread-safety: every method may be called from any thread.
#ifndef MEMKV_CLIENT_CLIENT_METRICS_H_
#define MEMKV_CLIENT_CLIENT_METRICS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "client/access_log.h"
#include "memkv/client.h"
#include "memkv/status.h"
#include "metrics/histogram.h"
#include "metrics/table.h"

namespace memkv::client {

enum class ClientOp : uint8_t { kPut, kGet, kDelete, kExists, kBatchPut, kBatchGet, kBatchExists, kList, kStat, kMatchPrefix };
inline constexpr size_t kClientOps = 10;
// "put", "get", ..., "batch_get", "match_prefix": the op label.
std::string_view ClientOpName(ClientOp op);

// One operation's cells over one transport.
struct ClientCallCells {
  metrics::Counter requests;
  metrics::Counter errors;
  metrics::Histogram latency = metrics::Histogram::ForLatencyNanos();
};
using ClientCallTable = std::array<std::array<ClientCallCells, 2>, kClientOps>;  // [op][rdma]
using ClientBatchKeys = std::array<metrics::Histogram, 3>;                       // batch put, get, exists

// What one scrape reads: the cells, and the counters ClientStats carries.
struct ClientScrape {
  const ClientCallTable* calls = nullptr;
  const ClientBatchKeys* batch_keys = nullptr;
  const ClientStats* stats = nullptr;
  const std::vector<ServerView>* servers = nullptr;  // Client::Servers()
  AccessLogCounts access_log{};                      // zeros without one
};
using ClientMetric = metrics::MetricDescriptor<ClientScrape>;
std::span<const ClientMetric> ClientMetricTable();

class ClientMetrics {
 public:
  ClientMetrics();
  // One call, finished: its latency, and whether it failed (a status other
  // than Ok / NotFound; for a batch, any key's).
  void Record(ClientOp op, bool rdma, Nanos latency, bool failed);
  // Keys in one batch call.
  void RecordBatch(ClientOp op, size_t keys);
  // The exposition, with the counters `stats` carries (timeouts, bytes,
  // fallbacks, completion errors) and the transport in use.
  // With the servers as Client::Servers() shows them (state and share).
  // With the access log's counts (access_log.h), zeros without one.
  std::string Text(const ClientStats& stats, const std::vector<ServerView>& servers = {},
                   const AccessLogCounts& access_log = {}) const;

 private:
  ClientCallTable cells_;
  ClientBatchKeys batch_keys_;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_CLIENT_METRICS_H_
