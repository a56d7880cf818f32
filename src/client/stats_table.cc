// The client's statistics table: ClientStatsTable() (memkv/client.h) and the
// cell of ClientCounters each counting row is read from.
#include <vector>

#include "client/counters.h"
#include "memkv/client.h"

namespace memkv::client {
namespace {

using Cell = std::atomic<uint64_t> ClientCounters::*;

struct StatRow {
  ClientStatInfo info;
  Cell cell = nullptr;  // counting rows: where ClientCounters keeps the tally
};

constexpr ClientStatKind kCount = ClientStatKind::kCount;
constexpr ClientStatKind kText = ClientStatKind::kText;

constexpr StatRow Count(std::string_view name, std::string_view doc, uint64_t ClientStats::*field, Cell cell) {
  return {{.name = name, .kind = kCount, .doc = doc, .count = field}, cell};
}
constexpr StatRow Text(std::string_view name, std::string_view doc, std::string ClientStats::*field) {
  return {{.name = name, .kind = kText, .doc = doc, .text = field}, nullptr};
}

constexpr StatRow kRows[] = {
    Count("ops", "keys operated on (a batch of n counts n)", &ClientStats::ops, &ClientCounters::ops),
    Count("bytes_sent", "wire bytes sent, headers included", &ClientStats::bytes_sent, &ClientCounters::bytes_sent),
    Count("bytes_received", "wire bytes received, headers included", &ClientStats::bytes_received,
          &ClientCounters::bytes_received),
    Count("checksum_failures", "values dropped as misses for a checksum mismatch", &ClientStats::checksum_failures,
          &ClientCounters::checksum_failures),
    Count("timeouts", "deadlines hit", &ClientStats::timeouts, &ClientCounters::timeouts),
    Count("connections_opened", "server connections set up (handshakes completed)",
          &ClientStats::connections_opened, &ClientCounters::connections_opened),
    Text("transport", "what new operations use now: rdma or tcp", &ClientStats::transport),
    Count("rdma_ops", "operations whose value bytes moved by RDMA", &ClientStats::rdma_ops, &ClientCounters::rdma_ops),
    Count("rdma_bytes", "value bytes moved by RDMA WRITE / READ", &ClientStats::rdma_bytes,
          &ClientCounters::rdma_bytes),
    Count("rdma_zero_copy_ops", "of rdma_ops: straight from / into registered caller memory",
          &ClientStats::rdma_zero_copy_ops, &ClientCounters::rdma_zero_copy_ops),
    Count("tcp_ops", "operations whose value bytes rode inline over TCP", &ClientStats::tcp_ops,
          &ClientCounters::tcp_ops),
    Count("tcp_bytes", "value bytes carried inline over TCP", &ClientStats::tcp_bytes, &ClientCounters::tcp_bytes),
    Count("rdma_reissued", "operations re-issued over TCP after an RDMA failure", &ClientStats::rdma_reissued,
          &ClientCounters::rdma_reissued),
    Text("rdma_state", "where RDMA stands: active, fallback, no_device or off", &ClientStats::rdma_state),
    Count("fallbacks", "0 or 1: the client moved from RDMA to TCP for good", &ClientStats::fallbacks,
          &ClientCounters::fallbacks),
    Text("fallback_reason", "why the client fell back (or, for no_device, why it is on TCP)",
         &ClientStats::fallback_reason),
    Text("rdma_path", "the last RDMA connection set up: device, GID index, traffic class, SL, MTU, QPs, server",
         &ClientStats::rdma_path),
    {{.name = "completion_errors",
      .kind = ClientStatKind::kByStatus,
      .doc = "RDMA work completions in error, by ibv_wc_status",
      .by_status = &ClientStats::completion_errors},
     nullptr},
    Count("put_options_dropped", "puts stored without their options because their server predates them",
          &ClientStats::put_options_dropped, &ClientCounters::put_options_dropped),
    Count("grace_lookups", "misses asked again of the key's previous owner (grace window or draining owner)",
          &ClientStats::grace_lookups, &ClientCounters::grace_lookups),
    Count("grace_hits", "of grace_lookups: found on the previous owner", &ClientStats::grace_hits,
          &ClientCounters::grace_hits),
    Count("stores_shed", "puts shed (answered Busy, not stored) by a busy server or by the client",
          &ClientStats::stores_shed, &ClientCounters::stores_shed),
    Count("lookups", "keys looked up: each key of a get, an exists or a prefix match", &ClientStats::lookups,
          &ClientCounters::lookups),
    Count("found", "of lookups: found", &ClientStats::found, &ClientCounters::found),
    Count("fetched", "of found: values fetched (gets)", &ClientStats::fetched, &ClientCounters::fetched),
    Count("fetched_in_time", "restored blocks the engine used (ReportRestores)", &ClientStats::fetched_in_time,
          &ClientCounters::fetched_in_time),
    Count("fetched_late", "restored blocks that came too late to use (ReportRestores)", &ClientStats::fetched_late,
          &ClientCounters::fetched_late),
    Count("placement_changes", "placements published after servers joined, left or changed id or weight",
          &ClientStats::placement_changes, &ClientCounters::placement_changes),
    Count("fallback_reads", "reads and deletes asked of the next server because the owner was unreachable",
          &ClientStats::fallback_reads, &ClientCounters::fallback_reads),
    Count("fallback_writes", "puts stored on the next server because the owner was down or draining",
          &ClientStats::fallback_writes, &ClientCounters::fallback_writes),
    Count("server_problems", "duplicate server ids and ids changed behind an address (each logged at WARN)",
          &ClientStats::server_problems, &ClientCounters::server_problems),
    Count("rdma_spare_puts", "of rdma_ops: puts written into a slot granted ahead (one round trip)",
          &ClientStats::rdma_spare_puts, &ClientCounters::rdma_spare_puts),
};

}  // namespace

ClientStats ClientCounters::Snapshot() const {
  ClientStats s;
  for (const StatRow& row : kRows) {
    if (row.cell != nullptr) s.*(row.info.count) = (this->*(row.cell)).load(std::memory_order_relaxed);
  }
  for (size_t i = 0; i < completion_errors.size(); ++i) {
    const uint64_t n = completion_errors[i].load(std::memory_order_relaxed);
    if (n != 0) s.completion_errors[static_cast<int>(i)] = n;
  }
  MutexLock lock(fallback_mu);
  s.fallback_reason = fallback_reason;
  s.rdma_path = rdma_path;
  return s;
}

}  // namespace memkv::client

// The public API of memkv/client.h.
namespace memkv {

std::span<const ClientStatInfo> ClientStatsTable() {
  static const std::vector<ClientStatInfo> infos = [] {
    std::vector<ClientStatInfo> out;
    for (const client::StatRow& row : client::kRows) out.push_back(row.info);
    return out;
  }();
  return infos;
}

}  // namespace memkv
