#include "client/client_metrics.h"

#include <utility>

#include "metrics/prometheus.h"

namespace memkv::client {
namespace {

constexpr std::string_view kOpNames[kClientOps] = {"put",       "get",       "delete",       "exists",
                                                   "batch_put", "batch_get", "batch_exists", "list",
                                                   "stat"};

// 1, 2, 4, ... 4096 keys per batch.
constexpr uint64_t kBatchBounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};

metrics::Histogram BatchHistogram() { return std::move(metrics::Histogram::Create(kBatchBounds)).value(); }

size_t BatchIndex(ClientOp op) {
  return op == ClientOp::kBatchPut ? 0 : op == ClientOp::kBatchGet ? 1 : 2;
}

}  // namespace

ClientMetrics::ClientMetrics() : batch_keys_{BatchHistogram(), BatchHistogram(), BatchHistogram()} {}

void ClientMetrics::Record(ClientOp op, bool rdma, Nanos latency, bool failed) {
  Cell& cell = cells_[static_cast<size_t>(op)][rdma ? 1 : 0];
  cell.requests.Add();
  if (failed) cell.errors.Add();
  cell.latency.Observe(latency > 0 ? static_cast<uint64_t>(latency) : 0);
}

void ClientMetrics::RecordBatch(ClientOp op, size_t keys) { batch_keys_[BatchIndex(op)].Observe(keys); }

std::string ClientMetrics::Text(const ClientStats& stats) const {
  metrics::PrometheusWriter p;
  for (size_t op = 0; op < kClientOps; ++op) {
    for (int rdma = 0; rdma < 2; ++rdma) {
      const Cell& cell = cells_[op][rdma];
      const metrics::Labels labels = {{"op", kOpNames[op]}, {"transport", rdma ? "rdma" : "tcp"}};
      p.AddCounter("memkv_client_requests_total", "Client calls finished, by operation and transport in use.",
                   labels, cell.requests.Value());
      p.AddCounter("memkv_client_request_errors_total",
                   "Client calls that failed (a status other than ok or not found).", labels, cell.errors.Value());
      p.AddHistogram("memkv_client_request_duration_seconds", "Client call latency, from call to return.", labels,
                     cell.latency.Snapshot(), metrics::kNanosPerSecond);
    }
  }
  for (ClientOp op : {ClientOp::kBatchPut, ClientOp::kBatchGet, ClientOp::kBatchExists}) {
    p.AddHistogram("memkv_client_batch_keys", "Keys per batch call.",
                   {{"op", kOpNames[static_cast<size_t>(op)]}}, batch_keys_[BatchIndex(op)].Snapshot());
  }
  p.AddGauge("memkv_client_transport", "1 for the transport new calls use now, 0 for the other.",
             {{"transport", "rdma"}}, stats.transport == "rdma" ? 1 : 0);
  p.AddGauge("memkv_client_transport", "1 for the transport new calls use now, 0 for the other.",
             {{"transport", "tcp"}}, stats.transport == "rdma" ? 0 : 1);
  p.AddCounter("memkv_client_timeouts_total", "Deadlines hit (MEMKV_TIMEOUT_MS).", {}, stats.timeouts);
  p.AddCounter("memkv_client_checksum_failures_total", "Values that did not match their checksum (dropped).", {},
               stats.checksum_failures);
  p.AddCounter("memkv_client_connections_opened_total", "Server connections set up (handshakes completed).", {},
               stats.connections_opened);
  p.AddCounter("memkv_client_value_bytes_total", "Value bytes moved, by transport.", {{"transport", "rdma"}},
               stats.rdma_bytes);
  p.AddCounter("memkv_client_value_bytes_total", "Value bytes moved, by transport.", {{"transport", "tcp"}},
               stats.tcp_bytes);
  p.AddCounter("memkv_client_rdma_fallbacks_total",
               "Downgrades from RDMA to TCP after an RDMA failure (0 or 1 per client; a host without any RDMA "
               "device is not one: see memkv_client_rdma_state).",
               {}, stats.fallbacks);
  for (std::string_view state : {"active", "fallback", "no_device", "off"}) {
    p.AddGauge("memkv_client_rdma_state",
               "1 for where RDMA stands: active, fallback (failed, downgraded to TCP), no_device (no RDMA device "
               "on this host), off (transport tcp).",
               {{"state", state}}, stats.rdma_state == state ? 1 : 0);
  }
  p.AddCounter("memkv_client_rdma_reissued_total", "Calls re-issued over TCP after an RDMA failure.", {},
               stats.rdma_reissued);
  for (const auto& [status, n] : stats.completion_errors) {
    p.AddCounter("memkv_client_rdma_completion_errors_total",
                 "RDMA work completions in error, by ibv_wc_status (12 = retry exceeded).",
                 {{"status", std::to_string(status)}}, n);
  }
  return p.Text();
}

}  // namespace memkv::client
