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
  std::array<Counter, 256> requests_by_opcode{};
  std::array<Counter, 256> errors_by_opcode{};  // responses with a status other than Ok/NotFound
};

}  // namespace memkv

#endif  // MEMKV_SERVER_METRICS_H_
