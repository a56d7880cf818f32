// ServerMetrics: the server's counters, shared by all worker threads.
// Relaxed atomics: each counter is exact, a set read together may be skewed.
// The admin endpoint (Prometheus text) reads these.
#ifndef MEMKV_SERVER_METRICS_H_
#define MEMKV_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>

namespace memkv {

struct ServerMetrics {
  using Counter = std::atomic<uint64_t>;
  Counter connections_accepted{0};
  Counter connections_active{0};
  Counter connections_closed_idle{0};    // handshake or drain timeout
  Counter connections_closed_stalled{0}; // stopped reading its responses
  Counter auth_failures{0};              // wrong key, tampered, replayed, unauthenticated
  Counter protocol_errors{0};            // malformed frames, unknown opcodes, bad checksums
  Counter unsupported_version{0};
  Counter bytes_received{0};
  Counter bytes_sent{0};
  Counter payload_checksum_failures{0};  // payload did not match the checksum it came with
  // RDMA (bytes moved by the clients' one-sided WRITE / READ, as granted).
  Counter rdma_connections{0};           // connections whose RDMA offer was accepted
  Counter rdma_refused{0};               // offers refused (MTU mismatch, QP setup) or without a device
  Counter rdma_put_bytes{0};             // committed through RdmaPut / RdmaCommit
  Counter rdma_get_bytes{0};             // pinned for RdmaGet
  Counter rdma_commit_checksum_failures{0};  // landed bytes did not match the declared checksum
  Counter rdma_leases_expired{0};        // connections closed for holding a grant too long
  std::array<Counter, 256> requests_by_opcode{};
  std::array<Counter, 256> errors_by_opcode{};  // responses with a status other than Ok/NotFound
};

}  // namespace memkv

#endif  // MEMKV_SERVER_METRICS_H_
