// Server: the TCP data listener and its worker threads.
//
// One acceptor (the thread that calls Run) hands each accepted connection to
// one of `workers` event-loop threads, round robin. A worker owns its
// connections outright (epoll, no locks on the data path); the only shared
// state is the store (a TieredStore, internally locked) and the metrics
// (atomics). Drive work runs on the store's I/O threads, never on a worker;
// its completions come back through each worker's CompletionInbox.
//
// Stop() may be called from any thread: the listener closes, workers stop
// reading new requests, flush what is queued for up to `drain_timeout_ms`,
// then close every connection; Run() returns after that.
#ifndef MEMKV_SERVER_SERVER_H_
#define MEMKV_SERVER_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/unique_fd.h"
#include "memkv/status.h"
#include "server/connection_limits.h"
#include "server/credentials.h"
#include "server/fleet.h"
#include "server/metrics.h"
#include "server/identities.h"
#include "server/namespace_stats.h"
#include "server/rdma_endpoint.h"
#include "tier/tiered_store.h"

namespace memkv::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 9900;                 // 0 = any free port
  std::vector<uint8_t> auth_key;        // 32 bytes
  int workers = 0;                      // 0 = one per core, at most 8
  uint32_t handshake_timeout_ms = 10000;  // close connections that never authenticate
  // Connections beyond these (open in all; open and not yet authenticated)
  // are closed at once on accept, counted and logged.
  uint32_t max_connections = 10000;
  uint32_t max_unauthenticated_connections = 4096;
  uint32_t drain_timeout_ms = 5000;     // on Stop, time to flush queued responses
  // A client that stops reading while responses are queued holds their
  // values pinned (unevictable); after this long without progress it is closed.
  uint32_t write_stall_timeout_ms = 30000;
  // network.frame_timeout_ms: an authenticated client must send each frame
  // whole within this of its first byte; one stuck mid-frame (holding the
  // pool space reserved for a put's value) is closed and the space released.
  uint32_t frame_timeout_ms = 30000;
  // network.loads_first: connections waiting on a load are served ahead of
  // those receiving a put's value, which take at most kStoreTurnBytes of it
  // per turn (server.cc, Worker::Loop).
  bool loads_first = true;
  // network.busy_poll_us: how long a worker polls after a turn before it
  // sleeps, at most (IdlePoll); 0: it sleeps at once.
  uint32_t busy_poll_us = 100;
  // memory.max_value_size: the largest value stored, announced at Connect;
  // at most proto::kMaxValueBytesCeiling.
  uint64_t max_value_bytes = 16ULL << 30;
  // RDMA (null: TCP only). A slot or pin held longer than the lease closes
  // the connection that holds it.
  RdmaEndpoint* rdma = nullptr;
  uint32_t rdma_grant_lease_ms = 30000;
  // Per-namespace counts (metrics.namespace_*); null: not counted. Must
  // outlive the server.
  NamespaceStats* namespaces = nullptr;
  // The cache identities served and their counts; null: every identity
  // accepted, nothing counted. Must outlive the server.
  Identities* identities = nullptr;
  // The keys that may sign a Connect (administrator and tenants), replaced
  // whole on a reload; must outlive the server. Null: the server holds just
  // auth_key, the administrator's.
  CredentialStore* credentials = nullptr;
  TenantStats* tenant_stats = nullptr;  // the tenants' counters; null: none
  // Identity, draining and the put queue's bound (fleet.h); null: never
  // draining nor busy, and ServerInfo is answered "unknown opcode".
  FleetState* fleet = nullptr;
};

class Server {
 public:
  // Binds the listener (so the port is known and in use on return). `store`
  // (memory only or with drives) must outlive the server.
  static Result<std::unique_ptr<Server>> Create(const ServerOptions& options, tier::TieredStore* store);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const { return port_; }
  // Serves until Stop(); then drains and returns.
  Status Run();
  void Stop();

  ServerMetrics& metrics() { return metrics_; }
  CredentialStore& credentials() { return *credentials_; }
  // After the credentials were replaced: wakes every worker to re-check its
  // connections against them (Session::RecheckCredential) and waits until
  // each has, or `timeout_ns` passed (workers not running have nothing to
  // check). True when every worker had checked. Any thread.
  bool RecheckCredentials(Nanos timeout_ns);
  // Connections revoked by re-checks, ever (a reload's share: the
  // difference across it).
  uint64_t credentials_revoked() const { return credentials_revoked_.load(std::memory_order_acquire); }
  // True from Create (the listener is bound: connections queue until Run
  // accepts them) until Stop.
  bool serving() const { return !stopping_.load(std::memory_order_acquire); }

 private:
  class Worker;
  Server(const ServerOptions& options, tier::TieredStore* store, UniqueFd listener, uint16_t port);

  ServerOptions options_;
  tier::TieredStore* store_;
  UniqueFd listener_;
  UniqueFd stop_event_;  // eventfd that wakes the acceptor
  uint16_t port_;
  std::atomic<bool> stopping_{false};
  ServerMetrics metrics_;
  ConnectionLimits limits_;
  std::unique_ptr<CredentialStore> own_credentials_;  // when options_.credentials is null
  CredentialStore* credentials_ = nullptr;
  std::atomic<uint64_t> credentials_revoked_{0};      // connections revoked by reloads, ever
  // Guards no field: a worker stores its (atomic) running_ and
  // checked_generation_ under it, so a RecheckCredentials waiter cannot miss
  // the notify that follows.
  Mutex recheck_mu_;
  std::condition_variable recheck_cv_;                // a worker finished a re-check
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_SERVER_H_
