// Counters of the admin HTTP server: HttpServerStats is the snapshot callers
// read (e.g. for /v1/metrics); HttpCounters are the live relaxed atomics the
// server thread bumps. Thread-safety: HttpCounters may be read from any
// thread; a snapshot is not atomic as a whole.
#ifndef MEMKV_HTTP_HTTP_STATS_H_
#define MEMKV_HTTP_HTTP_STATS_H_

#include <atomic>
#include <cstdint>

namespace memkv::http {

struct HttpServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;        // all sockets the server holds now
  uint64_t rejected_busy = 0;           // answered 503 or closed because max_connections were open
  uint64_t shed = 0;                    // closed without a complete request to admit a newer connection
  uint64_t requests = 0;                // complete, well-formed requests routed (2xx..5xx incl. 404/405)
  uint64_t bad_requests = 0;            // answered 400, 413 or 431
  uint64_t timeouts = 0;                // handshake, request or response not done in time
  uint64_t tls_handshake_failures = 0;
  uint64_t handler_errors = 0;          // a handler threw or returned an invalid response: 500
};

struct HttpCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> rejected_busy{0};
  std::atomic<uint64_t> shed{0};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bad_requests{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> tls_handshake_failures{0};
  std::atomic<uint64_t> handler_errors{0};

  static void Bump(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

  HttpServerStats Snapshot() const {
    HttpServerStats s;
    s.connections_accepted = connections_accepted.load(std::memory_order_relaxed);
    s.connections_open = connections_open.load(std::memory_order_relaxed);
    s.rejected_busy = rejected_busy.load(std::memory_order_relaxed);
    s.shed = shed.load(std::memory_order_relaxed);
    s.requests = requests.load(std::memory_order_relaxed);
    s.bad_requests = bad_requests.load(std::memory_order_relaxed);
    s.timeouts = timeouts.load(std::memory_order_relaxed);
    s.tls_handshake_failures = tls_handshake_failures.load(std::memory_order_relaxed);
    s.handler_errors = handler_errors.load(std::memory_order_relaxed);
    return s;
  }
};

}  // namespace memkv::http

#endif  // MEMKV_HTTP_HTTP_STATS_H_
