// ServerMetrics: the server's counters, shared by all worker and I/O threads.
//
// Counters and histograms are the lock-free sharded cells of src/metrics: a
// worker counting a request touches a cache line no other thread writes, and
// no lock is ever taken to count. Each value is exact; a set read together
// (a scrape) may be skewed by the requests in flight. The admin endpoint
// (admin.h) turns them into Prometheus text; docs/metrics.md lists the names.
#ifndef MEMKV_SERVER_METRICS_H_
#define MEMKV_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "metrics/histogram.h"

namespace memkv::server {

// The operations the server counts separately (one per known opcode, plus
// one for everything else).
enum class OpSlot : uint8_t {
  kPing, kConnect, kPut, kGet, kDelete, kExists, kBatchPut, kBatchGet, kBatchExists,
  kRdmaPut, kRdmaCommit, kRdmaGet, kRdmaRelease, kList, kStat, kMatchPrefix, kOther,
};
inline constexpr size_t kOpSlots = 17;
OpSlot OpSlotFor(uint8_t opcode);
// "put", "rdma_get", ...: the `op` label.
std::string_view OpSlotName(OpSlot slot);
// "tcp" for the inline-bulk opcodes, "rdma" for the RDMA control opcodes
// (whose value bytes move by RDMA): the `transport` label.
std::string_view OpSlotTransport(OpSlot slot);

struct OpMetrics {
  metrics::Counter requests;
  metrics::Counter errors;        // answered with a status other than Ok / NotFound
  metrics::Counter value_bytes;   // value bytes stored (puts) or served (gets)
  // From the request's header arriving to its response being queued (drive
  // work included), in nanoseconds.
  metrics::Histogram latency = metrics::Histogram::ForLatencyNanos();
};

struct ServerMetrics {
  using Counter = metrics::Counter;
  Counter connections_accepted;
  Counter accept_failures;             // accept(2) out of descriptors or memory: accepts paused 100 ms
  std::atomic<int64_t> connections_active{0};  // a gauge: up and down
  Counter connections_closed_idle;     // no Connect within the handshake timeout
  Counter connections_closed_stalled;  // stopped reading its responses
  Counter connections_closed_frame_timeout;  // a frame not whole within network.frame_timeout_ms
  // Closed at once on accept: network.max_connections (all open) or
  // network.max_unauthenticated_connections (before Connect) was reached.
  Counter connections_refused_max_connections;
  Counter connections_refused_max_unauthenticated;
  // An unauthenticated connection closed to admit a newer one while
  // network.max_unauthenticated_connections was reached (oldest first).
  Counter connections_shed;
  // Turns of a connection receiving a put's value cut at the per-turn bound
  // (network.loads_first), so that connections waiting on a load go first.
  Counter store_turns_yielded;
  // Connections waiting on a load served ahead of ready connections that
  // were receiving a put's value (network.loads_first).
  Counter loads_served_first;
  // Idle spells of the workers (nothing left to do after a turn), by how
  // they ended: an event caught while polling (network.busy_poll_us), or a
  // sleep in epoll_wait (woken, or its timeout). And the time spent polling.
  Counter idle_spells_polled;
  Counter idle_spells_slept;
  Counter idle_poll_ns;
  // Admin requests refused for failed authentication, by AdminAuthFailure
  // (server/admin_auth.h).
  std::array<Counter, 7> admin_auth_failures;  // kAdminAuthFailureKinds
  Counter auth_failures;               // wrong key, tampered, replayed, unauthenticated
  Counter protocol_errors;             // malformed frames, unknown opcodes, bad checksums
  Counter unsupported_version;
  Counter bytes_received;
  Counter bytes_sent;
  Counter payload_checksum_failures;   // payload did not match the checksum it came with
  // RDMA (bytes moved by the clients' one-sided WRITE / READ, as granted).
  Counter rdma_connections;            // connections whose RDMA offer was accepted
  Counter rdma_refused;                // offers refused (MTU mismatch, QP setup) or without a device
  Counter rdma_put_bytes;              // committed through RdmaPut / RdmaCommit
  Counter rdma_get_bytes;              // pinned for RdmaGet
  Counter rdma_commit_checksum_failures;  // landed bytes did not match the declared checksum
  Counter rdma_leases_expired;         // connections closed for holding a grant too long
  std::array<OpMetrics, kOpSlots> ops;

  OpMetrics& op(uint8_t opcode) { return ops[static_cast<size_t>(OpSlotFor(opcode))]; }
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_METRICS_H_
