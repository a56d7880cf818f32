// ClientCounters: the client's statistics, bumped from every calling thread.
// Relaxed atomics: each counter is an independent tally, read only to report.
// Each counter is read into ClientStats by its row of the client's stats
// table (stats_table.cc): a new counter is a cell here, a ClientStats field,
// one row there and the increment where it happens.
#ifndef MEMKV_CLIENT_COUNTERS_H_
#define MEMKV_CLIENT_COUNTERS_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "base/mutex.h"
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
  // Per transport (see ClientStats).
  std::atomic<uint64_t> rdma_ops{0};
  std::atomic<uint64_t> rdma_bytes{0};
  std::atomic<uint64_t> rdma_zero_copy_ops{0};
  std::atomic<uint64_t> rdma_spare_puts{0};
  std::atomic<uint64_t> tcp_ops{0};
  std::atomic<uint64_t> tcp_bytes{0};
  std::atomic<uint64_t> rdma_reissued{0};
  std::atomic<uint64_t> put_options_dropped{0};
  // Membership and placement (see ClientStats).
  std::atomic<uint64_t> grace_lookups{0};
  std::atomic<uint64_t> grace_hits{0};
  std::atomic<uint64_t> stores_shed{0};
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> found{0};
  std::atomic<uint64_t> fetched{0};
  std::atomic<uint64_t> fetched_in_time{0};
  std::atomic<uint64_t> fetched_late{0};
  std::atomic<uint64_t> placement_changes{0};
  std::atomic<uint64_t> fallback_reads{0};
  std::atomic<uint64_t> fallback_writes{0};
  std::atomic<uint64_t> server_problems{0};
  std::atomic<uint64_t> fallbacks{0};
  std::array<std::atomic<uint64_t>, 32> completion_errors{};  // by ibv_wc_status (last: 31 and above)
  mutable Mutex fallback_mu;
  std::string fallback_reason MEMKV_GUARDED_BY(fallback_mu);
  std::string rdma_path MEMKV_GUARDED_BY(fallback_mu);

  void CountCompletionError(int status) {
    const size_t i = status < 0 ? 31 : std::min<size_t>(static_cast<size_t>(status), 31);
    completion_errors[i].fetch_add(1, std::memory_order_relaxed);
  }
  void SetFallbackReason(const std::string& reason) {
    MutexLock lock(fallback_mu);
    fallback_reason = reason;
  }
  void SetRdmaPath(const std::string& path) {
    MutexLock lock(fallback_mu);
    rdma_path = path;
  }

  static void Add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }

  // Every counting row of ClientStatsTable() (stats_table.cc), plus the
  // completion errors and the texts kept here; the caller adds transport and
  // rdma_state.
  ClientStats Snapshot() const;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_COUNTERS_H_
