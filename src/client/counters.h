// ClientCounters: the client's statistics, bumped from every calling thread.
// Relaxed atomics: each counter is an independent tally, read only to report.
#ifndef MEMKV_CLIENT_COUNTERS_H_
#define MEMKV_CLIENT_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "memkv/client.h"

namespace memkv::client {

struct ClientCounters {
  std::atomic<uint64_t> ops{0};                 // keys operated on (a batch of n counts n)
  std::atomic<uint64_t> bytes_sent{0};          // wire bytes, headers included
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> checksum_failures{0};   // values dropped as misses
  std::atomic<uint64_t> timeouts{0};            // deadlines hit: by a connection with requests outstanding,
                                                // or by a call waiting for (or reaching too late) a pool
  std::atomic<uint64_t> connections_opened{0};  // handshakes completed

  static void Add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }

  ClientStats Snapshot() const {
    ClientStats s;
    s.ops = ops.load(std::memory_order_relaxed);
    s.bytes_sent = bytes_sent.load(std::memory_order_relaxed);
    s.bytes_received = bytes_received.load(std::memory_order_relaxed);
    s.checksum_failures = checksum_failures.load(std::memory_order_relaxed);
    s.timeouts = timeouts.load(std::memory_order_relaxed);
    s.connections_opened = connections_opened.load(std::memory_order_relaxed);
    return s;
  }
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_COUNTERS_H_
