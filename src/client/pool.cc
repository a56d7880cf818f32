#include "client/pool.h"

#include <algorithm>
#include <chrono>

namespace memkv::client {

Status ServerHealth::Check(Nanos now, const std::string& server) const {
  if (backoff_ == 0 || now >= down_until_) return Status::Ok();
  const Nanos left_ms = (down_until_ - now + 999'999) / 1'000'000;
  return Unavailable("server " + server + " is marked down after '" + cause_.ToString() +
                     "'; it will be retried in " + std::to_string(left_ms) + " ms");
}

void ServerHealth::OnFailure(Nanos now, const Status& cause, Nanos cost_nanos) {
  // Only a slow failure backs off further: trying a server that refuses at
  // once costs a round trip, and a longer backoff would only keep a server
  // that is back unused (a restart is refused until it listens).
  const bool slow = cause.code() == StatusCode::kDeadlineExceeded || cost_nanos > kSlowFailureNanos;
  backoff_ = backoff_ == 0 || !slow ? kInitialBackoffNanos : std::min(backoff_ * 2, kMaxBackoffNanos);
  down_until_ = now + backoff_;
  cause_ = cause;
}

void ServerHealth::OnSuccess() {
  backoff_ = 0;
  down_until_ = 0;
  cause_ = Status::Ok();
}

ServerPool::ServerPool(Endpoint endpoint, const Key32& auth_key, uint32_t max_connections,
                       Nanos connect_timeout_nanos, ClientCounters* counters, const Clock* clock,
                       RdmaEngine* rdma)
    : endpoint_(std::move(endpoint)),
      auth_key_(auth_key),
      max_connections_(std::max<uint32_t>(max_connections, 1)),
      connect_timeout_nanos_(connect_timeout_nanos),
      counters_(counters),
      clock_(clock),
      rdma_(rdma) {}

Result<std::vector<std::unique_ptr<Connection>>> ServerPool::Acquire(size_t want, Nanos deadline,
                                                                     bool wait, Use use) {
  want = std::max<size_t>(want, 1);
  const bool store = use == Use::kStore;
  // Loads keep one connection that stores cannot take (pool.h).
  const uint32_t store_share = max_connections_ > 1 ? max_connections_ - 1 : 1;
  std::vector<std::unique_ptr<Connection>> got;
  size_t to_open = 0;
  bool waited = false;
  for (bool checked = false; !checked;) {
    MutexLock lock(mu_);
    for (;;) {
      MEMKV_RETURN_IF_ERROR(health_.Check(clock_->NowNanos(), endpoint_.name));
      // Checked before taking anything, after a wait too: a connection
      // handed out past the deadline could only time out, and a connect
      // started then would fail at once, blaming this server for time spent
      // elsewhere.
      const Nanos left = deadline - MonotonicNanos();
      if (left <= 0) {
        ClientCounters::Add(counters_->timeouts, 1);
        if (waited) {
          return DeadlineExceeded("all " + std::to_string(max_connections_) + " connections to " +
                                  endpoint_.name + " stayed busy until the deadline");
        }
        return DeadlineExceeded("the operation's deadline (timeout_ms) passed before the call "
                                "got to " + endpoint_.name);
      }
      const size_t may = store ? std::min<size_t>(want, store_share - std::min(stores_out_, store_share)) : want;
      while (got.size() < may && !idle_.empty()) {
        got.push_back(std::move(idle_.back()));
        idle_.pop_back();
      }
      to_open = std::min<size_t>(may - got.size(), max_connections_ - open_);
      if (!got.empty() || to_open > 0) break;
      if (!wait) return got;  // none: every connection is busy
      // Every connection is busy with another call: wait for one, but only
      // for the first; a call proceeds with what it has rather than queue.
      waited = true;
      lock.WaitFor(freed_, std::chrono::nanoseconds(left));
    }
    open_ += static_cast<uint32_t>(to_open);
    if (store) stores_out_ += static_cast<uint32_t>(got.size() + to_open);
    lock.Unlock();
    // A connection the server closed while it sat idle is replaced. The
    // check is a system call: outside the lock, which every call of every
    // thread takes twice.
    std::vector<std::unique_ptr<Connection>> stale;
    for (auto it = got.begin(); it != got.end();) {
      if ((*it)->IsStale()) {
        stale.push_back(std::move(*it));
        it = got.erase(it);
      } else {
        ++it;
      }
    }
    if (!stale.empty()) {
      lock.Lock();
      open_ -= static_cast<uint32_t>(stale.size());
      if (store) stores_out_ -= static_cast<uint32_t>(stale.size());
      lock.Unlock();
      stale.clear();  // closed outside the lock
    }
    // With nothing left in hand, take or open another; otherwise go on with
    // what there is (as when fewer than `want` are free).
    checked = !got.empty() || to_open > 0;
  }
  Status failure;
  const Nanos connect_deadline = std::min(deadline, MonotonicNanos() + connect_timeout_nanos_);
  for (size_t i = 0; i < to_open; ++i) {
    const Nanos started = clock_->NowNanos();
    Result<std::unique_ptr<Connection>> c =
        Connection::Start(endpoint_, auth_key_, connect_deadline, counters_, rdma_);
    if (c.ok()) {
      got.push_back(std::move(c).value());
    } else {
      failure = c.status();
      const Nanos now = clock_->NowNanos();
      MutexLock lock(mu_);
      --open_;
      if (store) --stores_out_;
      health_.OnFailure(now, failure, now - started);
      failing_.store(true, std::memory_order_relaxed);
      freed_.notify_one();
    }
  }
  if (got.empty()) return failure;
  return got;
}

bool ServerPool::Down(std::string* why) const {
  // A healthy server (every put and get asks, per key) takes no lock.
  if (!failing_.load(std::memory_order_relaxed)) return false;
  MutexLock lock(mu_);
  if (!health_.Down(clock_->NowNanos())) return false;
  if (why != nullptr) *why = health_.cause().ToString();
  return true;
}

bool ServerPool::Failing() const {
  MutexLock lock(mu_);
  return health_.backoff() != 0;
}

void ServerPool::Release(std::vector<std::unique_ptr<Connection>> connections, Use use) {
  std::vector<std::unique_ptr<Connection>> closing;  // closed outside the lock
  bool lost = false;
  bool reached = false;
  Status cause;
  for (std::unique_ptr<Connection>& c : connections) {
    if (c->Lost()) {
      lost = true;
      cause = c->error();
    } else if (c->WasReady()) {
      reached = true;
    }
  }
  {
    MutexLock lock(mu_);
    if (use == Use::kStore) stores_out_ -= std::min(stores_out_, static_cast<uint32_t>(connections.size()));
    for (std::unique_ptr<Connection>& c : connections) {
      if (c->Reusable()) {
        idle_.push_back(std::move(c));
      } else {
        --open_;
        closing.push_back(std::move(c));
      }
    }
    if (lost) {
      health_.OnFailure(clock_->NowNanos(), cause);
    } else if (reached) {
      // Back from down: keys placed elsewhere meanwhile may be found on
      // their fallback server for a while (the grace window).
      if (health_.backoff() != 0) joined_at_.store(clock_->NowNanos(), std::memory_order_relaxed);
      health_.OnSuccess();
    }
    failing_.store(health_.backoff() != 0, std::memory_order_relaxed);
  }
  freed_.notify_all();
}

}  // namespace memkv::client
