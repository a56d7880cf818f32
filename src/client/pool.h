// ServerPool: the connections to one server and what the client knows of its
// health.
//
// Connections: up to `max_connections`, opened lazily. A call checks out what
// it needs (at least one, waiting up to its deadline when every connection is
// busy, if it asks to wait), drives them, and releases them; healthy ones go
// back to the idle list, failed ones are closed. A connection the server
// closed while it was idle is noticed at checkout and replaced.
//
// Loads before stores: calls that store (puts) hold at most
// max_connections - 1 of the connections at once (all of them when there is
// only one), so a load never waits for a connection behind stores; a store
// waits (or, without `wait`, gets none) while stores hold their share.
// Requests of one call run on the connections it holds alone, so a load
// never queues behind another call's put on a connection either.
//
// Health: a connect failure, a timeout of a request the server was sent, or
// a lost connection marks the server down for a backoff, reset by the next
// success. How long depends on what the failure cost: one that came back at
// once (a refused connection: the host is up and nothing listens yet; a
// reset; a close) keeps the backoff at 200 ms, since trying again costs one
// round trip, so a restarted server is used again within 200 ms of
// listening; a timeout, or a failure that took over 100 ms (a slow name
// lookup), doubles it up to 10 s, since each try costs its caller that long.
// A call whose deadline ran out before it got to this server (waiting for
// this pool or for another server) is no sign of this server's health and
// leaves it alone.
// While down, Acquire fails at once with Unavailable naming the server, the
// failure and when it will be tried again, so a dead server costs its keys a
// fast miss rather than a timeout each. Refusals (wrong key, newer protocol)
// do not mark it down: retrying cannot be fast-failed into a fix, and the
// caller should see the server's reason every time.
//
// Thread-safety: all methods may be called from any thread; one mutex per
// server, never held while connecting or doing I/O on a connection.
#ifndef MEMKV_CLIENT_POOL_H_
#define MEMKV_CLIENT_POOL_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/hmac.h"
#include "base/mutex.h"
#include "client/connection.h"
#include "client/rdma.h"
#include "client/counters.h"

namespace memkv::client {

// Backoff bookkeeping, separated from the clock so it is testable as is.
class ServerHealth {
 public:
  static constexpr Nanos kInitialBackoffNanos = 200'000'000;
  static constexpr Nanos kMaxBackoffNanos = 10'000'000'000;
  // A failure that took longer than this is a slow one, like a timeout.
  static constexpr Nanos kSlowFailureNanos = 100'000'000;

  // Ok while the server may be tried; else Unavailable naming it.
  Status Check(Nanos now, const std::string& server) const;
  // `cost_nanos`: how long the failed attempt kept its caller, where known.
  // A DeadlineExceeded cause or a cost over kSlowFailureNanos doubles the
  // backoff; any other failure sets it to kInitialBackoffNanos.
  void OnFailure(Nanos now, const Status& cause, Nanos cost_nanos = 0);
  void OnSuccess();
  Nanos backoff() const { return backoff_; }
  // True while a failure's backoff has not run out.
  bool Down(Nanos now) const { return backoff_ != 0 && now < down_until_; }
  const Status& cause() const { return cause_; }

 private:
  Nanos backoff_ = 0;     // 0: healthy
  Nanos down_until_ = 0;
  Status cause_;
};

class ServerPool {
 public:
  // `counters` must outlive the pool; `clock` drives the health backoff. A
  // new connection gets `connect_timeout_nanos` from when it is opened (but
  // never past the call's deadline) to finish its connect and handshake.
  ServerPool(Endpoint endpoint, const Key32& auth_key, uint32_t max_connections,
             Nanos connect_timeout_nanos, ClientCounters* counters, const Clock* clock,
             RdmaEngine* rdma = nullptr);
  ServerPool(const ServerPool&) = delete;
  ServerPool& operator=(const ServerPool&) = delete;

  const Endpoint& endpoint() const { return endpoint_; }

  // Wire features this server answered "unknown opcode" for: it predates
  // them, and the client falls back for good (docs/wire-protocol.md,
  // "Versions").
  enum Feature : uint32_t { kMatchPrefix = 1u << 0, kPutOptions = 1u << 1 };
  bool Lacks(Feature f) const { return (lacking_.load(std::memory_order_relaxed) & f) != 0; }
  // Remembers that the server lacks `f`; true the first time (to log it once).
  bool MarkLacking(Feature f) { return (lacking_.fetch_or(f, std::memory_order_relaxed) & f) == 0; }
  // Set once, before the pool is used.
  void set_rdma(RdmaEngine* rdma) { rdma_ = rdma; }

  // What placement needs of the server's health (client/membership.h).
  // Down: backing off after a failure (Acquire would fail at once); the
  // reason in `why` when given.
  bool Down(std::string* why = nullptr) const;
  // Its last attempt failed and no success since (down, or due to be tried
  // again): the refresher probes it once its backoff has run out.
  bool Failing() const;
  // Draining: it answered a put Draining, or its ServerInfo said so; set
  // until a ServerInfo says otherwise. Busy: it shed a put, or its
  // ServerInfo said so; cleared by its next stored put or ServerInfo.
  bool draining() const { return draining_.load(std::memory_order_relaxed); }
  void set_draining(bool on) { draining_.store(on, std::memory_order_relaxed); }
  bool busy() const { return busy_.load(std::memory_order_relaxed); }
  void set_busy(bool on) { busy_.store(on, std::memory_order_relaxed); }
  // When the server last joined the placement or came back from down (0:
  // it was placed from the start and never down): for the client's
  // rebalance grace window, the keys it owns may still sit on the server
  // that owned them before.
  Nanos joined_at() const { return joined_at_.load(std::memory_order_relaxed); }
  void set_joined_at(Nanos at) { joined_at_.store(at, std::memory_order_relaxed); }

  // Between 1 and `want` connections for the caller's exclusive use; new ones
  // may still be establishing (DriveConnections finishes them, by their
  // connect deadline). When every connection is busy: with `wait`, waits for
  // one until `deadline`; without, returns none at once (an empty vector), so
  // a caller holding other servers' connections never blocks on this one.
  // Unavailable while the server is down or when it cannot be reached;
  // DeadlineExceeded when `deadline` has passed (on entry or while waiting),
  // which does not count against the server's health.
  // `use`: kStore for a call that stores (see "Loads before stores" above).
  enum class Use { kLoad, kStore };
  Result<std::vector<std::unique_ptr<Connection>>> Acquire(size_t want, Nanos deadline, bool wait,
                                                           Use use = Use::kLoad);

  // Returns what Acquire handed out, after DriveConnections, with the `use`
  // it was acquired for. Keeps the reusable ones and updates the server's
  // health from how they fared.
  void Release(std::vector<std::unique_ptr<Connection>> connections, Use use = Use::kLoad);

 private:
  std::atomic<uint32_t> lacking_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> busy_{false};
  std::atomic<Nanos> joined_at_{0};
  const Endpoint endpoint_;
  const Key32 auth_key_;
  const uint32_t max_connections_;
  const Nanos connect_timeout_nanos_;
  ClientCounters* const counters_;
  const Clock* const clock_;
  RdmaEngine* rdma_;  // new connections offer RDMA while it is active

  mutable Mutex mu_;
  std::condition_variable freed_;  // signalled when a connection or slot frees up
  // Idle connections, the number open (idle + checked out + establishing),
  // and the server's health.
  std::vector<std::unique_ptr<Connection>> idle_ MEMKV_GUARDED_BY(mu_);
  uint32_t open_ MEMKV_GUARDED_BY(mu_) = 0;
  uint32_t stores_out_ MEMKV_GUARDED_BY(mu_) = 0;  // checked out by storing calls
  ServerHealth health_ MEMKV_GUARDED_BY(mu_);
  // health_.backoff() != 0, written under mu_ with each change: Down reads
  // it without the lock, and looks closer only when it is set.
  std::atomic<bool> failing_{false};
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_POOL_H_
