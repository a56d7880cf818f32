#include "client/client_metrics.h"

#include <utility>

#include "metrics/prometheus.h"

namespace memkv::client {
namespace {

using metrics::Labels;
using metrics::MetricType;
using metrics::Samples;
using S = ClientScrape;

constexpr std::string_view kOpNames[kClientOps] = {"put",       "get",       "delete",       "exists",
                                                   "batch_put", "batch_get", "batch_exists", "list",
                                                   "stat", "match_prefix"};
constexpr ClientOp kBatchOps[] = {ClientOp::kBatchPut, ClientOp::kBatchGet, ClientOp::kBatchExists};

constexpr std::string_view kServerStates[] = {"up", "pending", "down", "draining", "busy", "duplicate"};

// 1, 2, 4, ... 4096 keys per batch.
constexpr uint64_t kBatchBounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};

metrics::Histogram BatchHistogram() { return std::move(metrics::Histogram::Create(kBatchBounds)).value(); }

size_t BatchIndex(ClientOp op) {
  return op == ClientOp::kBatchPut ? 0 : op == ClientOp::kBatchGet ? 1 : 2;
}

// The reader of a row with one unlabelled sample: a ClientStats count.
template <uint64_t ClientStats::*Field>
void ReadStat(const S& s, Samples& out) {
  out.Counter({}, (*s.stats).*Field);
}

// Every (op, transport) cell with its labels, ops in ClientOp order, tcp first.
template <typename Fn>
void ForEachCall(const S& s, Fn&& fn) {
  for (size_t op = 0; op < kClientOps; ++op) {
    for (int rdma = 0; rdma < 2; ++rdma) {
      fn(Labels{{"op", kOpNames[op]}, {"transport", rdma ? "rdma" : "tcp"}}, (*s.calls)[op][rdma]);
    }
  }
}

constexpr ClientMetric kMetrics[] = {
    {"memkv_client_requests_total", MetricType::kCounter, "op,transport",
     "Client calls finished, by operation and transport in use.",
     [](const S& s, Samples& out) {
       ForEachCall(s, [&](const Labels& l, const ClientCallCells& c) { out.Counter(l, c.requests.Value()); });
     }},
    {"memkv_client_request_errors_total", MetricType::kCounter, "op,transport",
     "Client calls that failed (a status other than ok or not found).",
     [](const S& s, Samples& out) {
       ForEachCall(s, [&](const Labels& l, const ClientCallCells& c) { out.Counter(l, c.errors.Value()); });
     }},
    {"memkv_client_request_duration_seconds", MetricType::kHistogram, "op,transport",
     "Client call latency, from call to return.",
     [](const S& s, Samples& out) {
       ForEachCall(s, [&](const Labels& l, const ClientCallCells& c) {
         out.Histogram(l, c.latency.Snapshot(), metrics::kNanosPerSecond);
       });
     }},
    {"memkv_client_batch_keys", MetricType::kHistogram, "op", "Keys per batch call.",
     [](const S& s, Samples& out) {
       for (ClientOp op : kBatchOps) {
         out.Histogram({{"op", kOpNames[static_cast<size_t>(op)]}}, (*s.batch_keys)[BatchIndex(op)].Snapshot());
       }
     }},
    {"memkv_client_transport", MetricType::kGauge, "transport",
     "1 for the transport new calls use now, 0 for the other.",
     [](const S& s, Samples& out) {
       out.Gauge({{"transport", "rdma"}}, s.stats->transport == "rdma" ? 1 : 0);
       out.Gauge({{"transport", "tcp"}}, s.stats->transport == "rdma" ? 0 : 1);
     }},
    {"memkv_client_timeouts_total", MetricType::kCounter, "", "Deadlines hit (MEMKV_TIMEOUT_MS).",
     ReadStat<&ClientStats::timeouts>},
    {"memkv_client_checksum_failures_total", MetricType::kCounter, "",
     "Values that did not match their checksum (dropped).",
     ReadStat<&ClientStats::checksum_failures>},
    {"memkv_client_connections_opened_total", MetricType::kCounter, "",
     "Server connections set up (handshakes completed).",
     ReadStat<&ClientStats::connections_opened>},
    {"memkv_client_value_bytes_total", MetricType::kCounter, "transport", "Value bytes moved, by transport.",
     [](const S& s, Samples& out) {
       out.Counter({{"transport", "rdma"}}, s.stats->rdma_bytes);
       out.Counter({{"transport", "tcp"}}, s.stats->tcp_bytes);
     }},
    {"memkv_client_rdma_fallbacks_total", MetricType::kCounter, "",
     "Downgrades from RDMA to TCP after an RDMA failure (0 or 1 per client; a host without any RDMA "
     "device is not one: see memkv_client_rdma_state).",
     ReadStat<&ClientStats::fallbacks>},
    {"memkv_client_rdma_state", MetricType::kGauge, "state",
     "1 for where RDMA stands: active, fallback (failed, downgraded to TCP), no_device (no RDMA device "
     "on this host), off (transport tcp).",
     [](const S& s, Samples& out) {
       for (std::string_view state : {"active", "fallback", "no_device", "off"}) {
         out.Gauge({{"state", state}}, s.stats->rdma_state == state ? 1 : 0);
       }
     }},
    {"memkv_client_rdma_reissued_total", MetricType::kCounter, "", "Calls re-issued over TCP after an RDMA failure.",
     ReadStat<&ClientStats::rdma_reissued>},
    {"memkv_client_server_state", MetricType::kGauge, "server,server_id,state",
     "1 for the state each server is in as the client sees it: up, pending, down, draining, busy, duplicate.",
     [](const S& s, Samples& out) {
       if (s.servers == nullptr) return;
       for (const ServerView& v : *s.servers) {
         for (std::string_view state : kServerStates) {
           out.Gauge({{"server", v.name}, {"server_id", v.id}, {"state", state}}, v.state == state ? 1 : 0);
         }
       }
     }},
    {"memkv_client_server_share", MetricType::kGauge, "server,server_id",
     "Fraction of the key space each server owns in the client's placement (its weight over the sum).",
     [](const S& s, Samples& out) {
       if (s.servers == nullptr) return;
       for (const ServerView& v : *s.servers) out.Gauge({{"server", v.name}, {"server_id", v.id}}, v.share);
     }},
    {"memkv_client_grace_lookups_total", MetricType::kCounter, "",
     "Misses asked again of the key's previous owner (a new or draining owner).",
     ReadStat<&ClientStats::grace_lookups>},
    {"memkv_client_grace_hits_total", MetricType::kCounter, "", "Grace lookups that found the key.",
     ReadStat<&ClientStats::grace_hits>},
    {"memkv_client_stores_shed_total", MetricType::kCounter, "", "Puts shed (not stored) by a busy server or by the client itself.",
     ReadStat<&ClientStats::stores_shed>},
    {"memkv_client_lookups_total", MetricType::kCounter, "",
     "Keys looked up: each key of a get, an exists or a prefix match.", ReadStat<&ClientStats::lookups>},
    {"memkv_client_found_total", MetricType::kCounter, "", "Keys looked up and found.", ReadStat<&ClientStats::found>},
    {"memkv_client_fetched_total", MetricType::kCounter, "", "Keys found whose values were fetched (gets).",
     ReadStat<&ClientStats::fetched>},
    {"memkv_client_fetched_in_time_total", MetricType::kCounter, "",
     "Restored blocks the engine used, as the adapter reports them (ReportRestores).",
     ReadStat<&ClientStats::fetched_in_time>},
    {"memkv_client_fetched_late_total", MetricType::kCounter, "",
     "Restored blocks that came too late for the engine to use (ReportRestores).",
     ReadStat<&ClientStats::fetched_late>},
    {"memkv_client_placement_changes_total", MetricType::kCounter, "",
     "Placements published after servers joined, left or changed id or weight.",
     ReadStat<&ClientStats::placement_changes>},
    {"memkv_client_rdma_completion_errors_total", MetricType::kCounter, "status",
     "RDMA work completions in error, by ibv_wc_status (12 = retry exceeded).",
     [](const S& s, Samples& out) {
       for (const auto& [status, n] : s.stats->completion_errors) out.Counter({{"status", std::to_string(status)}}, n);
     }},
    {"memkv_client_access_log_lines_total", MetricType::kCounter, "",
     "Access log lines written (access_log_path; 0 without one).",
     [](const S& s, Samples& out) { out.Counter({}, s.access_log.lines); }},
    {"memkv_client_access_log_dropped_total", MetricType::kCounter, "reason",
     "Access log lines dropped: rate (over access_log_max_lines_per_sec), buffer (the writer fell behind), "
     "write (the file refused them).",
     [](const S& s, Samples& out) {
       out.Counter({{"reason", "rate"}}, s.access_log.dropped_rate);
       out.Counter({{"reason", "buffer"}}, s.access_log.dropped_buffer);
       out.Counter({{"reason", "write"}}, s.access_log.dropped_write);
     }},
};

}  // namespace

std::span<const ClientMetric> ClientMetricTable() { return kMetrics; }

std::string_view ClientOpName(ClientOp op) { return kOpNames[static_cast<size_t>(op)]; }

ClientMetrics::ClientMetrics() : batch_keys_{BatchHistogram(), BatchHistogram(), BatchHistogram()} {}

void ClientMetrics::Record(ClientOp op, bool rdma, Nanos latency, bool failed) {
  ClientCallCells& cell = cells_[static_cast<size_t>(op)][rdma ? 1 : 0];
  cell.requests.Add();
  if (failed) cell.errors.Add();
  cell.latency.Observe(latency > 0 ? static_cast<uint64_t>(latency) : 0);
}

void ClientMetrics::RecordBatch(ClientOp op, size_t keys) { batch_keys_[BatchIndex(op)].Observe(keys); }

std::string ClientMetrics::Text(const ClientStats& stats, const std::vector<ServerView>& servers,
                                const AccessLogCounts& access_log) const {
  metrics::PrometheusWriter writer;
  metrics::WriteTable(ClientMetricTable(), ClientScrape{&cells_, &batch_keys_, &stats, &servers, access_log}, &writer);
  return writer.Text();
}

}  // namespace memkv::client
