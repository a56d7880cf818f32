// ConnectionLimits: how many client connections one Server keeps open at
// once, in all (network.max_connections) and before they authenticate
// (network.max_unauthenticated_connections).
//
// A worker reserves a slot with TryAdmit before it builds a Connection; the
// Connection moves its slot to "authenticated" when its Connect verifies and
// gives it back when it is destroyed. Counts are exact across workers
// (compare-and-swap), so a limit of N admits at most N.
//
// Shares: each worker admits through a share of its own (a ConnectionLimits
// with the Server's as parent) that holds its part of the unauthenticated
// limit (the limit divided among the workers, at least 1 each); the share
// reserves in itself and then in the parent. A worker whose share is full
// sheds its own oldest unauthenticated connection (server.cc): the slot
// that frees is its own, so no other worker can take it, and a worker's
// share never drains into another's.
//
// Shared by the workers of one Server (a share by its worker and its
// connections); every method is thread-safe.
#ifndef MEMKV_SERVER_CONNECTION_LIMITS_H_
#define MEMKV_SERVER_CONNECTION_LIMITS_H_

#include <atomic>
#include <cstdint>

namespace memkv::server {

class ConnectionLimits {
 public:
  enum class Refusal { kNone, kMaxConnections, kMaxUnauthenticated };

  // `parent`: the Server's limits, of which this is a worker's share (it
  // must outlive the share).
  ConnectionLimits(uint32_t max_connections, uint32_t max_unauthenticated, ConnectionLimits* parent = nullptr)
      : max_open_(max_connections), max_unauthenticated_(max_unauthenticated), parent_(parent) {}

  // Worker `index` of `workers`' part of `max_unauthenticated`: an even
  // split, the remainder to the first workers, at least 1.
  static uint32_t Share(uint32_t max_unauthenticated, int workers, int index) {
    const uint32_t n = static_cast<uint32_t>(workers);
    const uint32_t share = max_unauthenticated / n + (static_cast<uint32_t>(index) < max_unauthenticated % n ? 1 : 0);
    return share == 0 ? 1 : share;
  }

  // Reserves an unauthenticated slot, or says which limit is reached.
  Refusal TryAdmit() {
    if (!Reserve(unauthenticated_, max_unauthenticated_)) return Refusal::kMaxUnauthenticated;
    if (!Reserve(open_, max_open_)) {
      unauthenticated_.fetch_sub(1, std::memory_order_relaxed);
      return Refusal::kMaxConnections;
    }
    if (parent_ != nullptr) {
      const Refusal refusal = parent_->TryAdmit();
      if (refusal != Refusal::kNone) {
        unauthenticated_.fetch_sub(1, std::memory_order_relaxed);
        open_.fetch_sub(1, std::memory_order_relaxed);
        return refusal;
      }
    }
    return Refusal::kNone;
  }
  void Authenticated() {
    unauthenticated_.fetch_sub(1, std::memory_order_relaxed);
    if (parent_ != nullptr) parent_->Authenticated();
  }
  void Release(bool authenticated) {
    if (!authenticated) unauthenticated_.fetch_sub(1, std::memory_order_relaxed);
    open_.fetch_sub(1, std::memory_order_relaxed);
    if (parent_ != nullptr) parent_->Release(authenticated);
  }

  uint32_t max_connections() const { return max_open_; }
  uint32_t max_unauthenticated() const { return max_unauthenticated_; }
  int64_t open() const { return open_.load(std::memory_order_relaxed); }
  int64_t unauthenticated() const { return unauthenticated_.load(std::memory_order_relaxed); }

 private:
  static bool Reserve(std::atomic<int64_t>& count, uint32_t max) {
    int64_t n = count.load(std::memory_order_relaxed);
    do {
      if (n >= int64_t{max}) return false;
    } while (!count.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    return true;
  }

  const uint32_t max_open_;
  const uint32_t max_unauthenticated_;
  ConnectionLimits* const parent_;
  std::atomic<int64_t> open_{0};
  std::atomic<int64_t> unauthenticated_{0};
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_CONNECTION_LIMITS_H_
