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
// Thread-safety: every method may be called from any thread.
#ifndef MEMKV_CLIENT_CLIENT_METRICS_H_
#define MEMKV_CLIENT_CLIENT_METRICS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/clock.h"
#include "memkv/client.h"
#include "memkv/status.h"
#include "metrics/histogram.h"

namespace memkv::client {

enum class ClientOp : uint8_t { kPut, kGet, kDelete, kExists, kBatchPut, kBatchGet, kBatchExists, kList, kStat };
inline constexpr size_t kClientOps = 9;

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
  std::string Text(const ClientStats& stats) const;

 private:
  struct Cell {
    metrics::Counter requests;
    metrics::Counter errors;
    metrics::Histogram latency = metrics::Histogram::ForLatencyNanos();
  };
  std::array<std::array<Cell, 2>, kClientOps> cells_;  // [op][rdma]
  std::array<metrics::Histogram, 3> batch_keys_;       // batch put, get, exists
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_CLIENT_METRICS_H_
