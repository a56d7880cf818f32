#include "server/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "base/hmac.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "io/socket.h"
#include "server/idle_poll.h"
#include "server/session.h"

namespace memkv::server {
namespace {

std::string PeerName(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
  port = ntohs(in6->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

constexpr Nanos kReapIntervalNs = 100'000'000;
// After this many connections closed, a worker hands the free memory in the
// malloc arenas back to the kernel (at most once per kTrimIntervalNs): what a
// crowd of connections left behind is small chunks spread between live ones,
// which free(3) alone keeps resident.
constexpr uint64_t kClosedBeforeTrim = 64;
constexpr Nanos kTrimIntervalNs = 1'000'000'000;

void Wake(int event_fd) {
  uint64_t one = 1;
  ssize_t ignored = ::write(event_fd, &one, sizeof(one));
  (void)ignored;
}

// TCP keepalive on data connections: a peer that vanished without a FIN or
// RST (host down, cable pulled) is found after kKeepAliveIdleS of silence
// plus kKeepAliveProbes unanswered probes kKeepAliveIntervalS apart (2 min),
// and its connection closed with whatever it held.
constexpr int kKeepAliveIdleS = 60;
constexpr int kKeepAliveIntervalS = 10;
constexpr int kKeepAliveProbes = 6;

Status SetKeepAlive(int fd) {
  const int on = 1;
  const std::pair<int, int> options[] = {
      {SOL_SOCKET, SO_KEEPALIVE}, {IPPROTO_TCP, TCP_KEEPIDLE}, {IPPROTO_TCP, TCP_KEEPINTVL}, {IPPROTO_TCP, TCP_KEEPCNT}};
  const int values[] = {on, kKeepAliveIdleS, kKeepAliveIntervalS, kKeepAliveProbes};
  const char* names[] = {"SO_KEEPALIVE", "TCP_KEEPIDLE", "TCP_KEEPINTVL", "TCP_KEEPCNT"};
  for (size_t i = 0; i < 4; ++i) {
    if (::setsockopt(fd, options[i].first, options[i].second, &values[i], sizeof(values[i])) != 0) {
      return Internal(std::string("setsockopt(") + names[i] + "): " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

// Loads before stores (ServerOptions::loads_first): the most of a put's
// value a connection takes in one turn before the worker serves the
// connections waiting on a load again. A 256 KiB copy is tens of
// microseconds; larger turns only delay the loads behind them.
constexpr uint64_t kStoreTurnBytes = 256 * 1024;

// How long accepts pause after accept(2) ran out of descriptors or memory
// (the admin endpoint pauses as long).
constexpr Nanos kAcceptPauseNs = 100'000'000;

uint64_t OpenFilesLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  return limit.rlim_cur;
}

}  // namespace

// One event loop thread and the connections it owns.
class Server::Worker {
 public:
  Worker(Server* server, int index, int workers)
      : server_(server),
        name_("memkv-worker-" + std::to_string(index)),
        limits_(UINT32_MAX,
                ConnectionLimits::Share(server->options_.max_unauthenticated_connections, workers, index),
                &server->limits_) {}

  Status Start() {
    epoll_.Reset(::epoll_create1(EPOLL_CLOEXEC));
    wake_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll_.valid() || !wake_.valid()) return Internal(std::string("epoll/eventfd: ") + std::strerror(errno));
    ctx_.store = server_->store_;
    inbox_ = std::make_shared<tier::CompletionInbox>(wake_.get());
    ctx_.inbox = inbox_;
    ctx_.turn = &turn_;
    ctx_.rdma = server_->options_.rdma;
    ctx_.rdma_grant_lease_ns = Nanos(server_->options_.rdma_grant_lease_ms) * 1'000'000;
    ctx_.frame_timeout_ns = Nanos(server_->options_.frame_timeout_ms) * 1'000'000;
    ctx_.max_value_bytes = server_->options_.max_value_bytes;
    ctx_.metrics = &server_->metrics_;
    ctx_.namespaces = server_->options_.namespaces;
    ctx_.identities = server_->options_.identities;
    ctx_.limits = &limits_;
    ctx_.credentials = server_->credentials_;
    ctx_.tenant_stats = server_->options_.tenant_stats;
    ctx_.fleet = server_->options_.fleet;
    ctx_.store_turn_bytes = server_->options_.loads_first ? kStoreTurnBytes : 0;
    checked_generation_.store(server_->credentials_->generation(), std::memory_order_release);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_.get();
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
    running_.store(true, std::memory_order_release);
    thread_ = std::thread([this] {
      SetThreadName(name_);
      Loop();
      {
        MutexLock lock(server_->recheck_mu_);  // a RecheckCredentials waiter sees it
        running_.store(false, std::memory_order_release);
      }
      server_->recheck_cv_.notify_all();
    });
    return Status::Ok();
  }

  void WakeUp() { Wake(wake_.get()); }
  bool running() const { return running_.load(std::memory_order_acquire); }
  uint64_t checked_generation() const { return checked_generation_.load(std::memory_order_acquire); }

  // Called by the acceptor thread.
  void Adopt(UniqueFd fd, std::string peer) {
    {
      MutexLock lock(mu_);
      incoming_.emplace_back(std::move(fd), std::move(peer));
    }
    Wake(wake_.get());
  }

  void Join() {
    Wake(wake_.get());
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    epoll_event events[128];
    Nanos drain_deadline = 0;
    for (;;) {
      bool stopping = server_->stopping_.load(std::memory_order_acquire);
      if (stopping && drain_deadline == 0) {
        drain_deadline = MonotonicNanos() + Nanos(server_->options_.drain_timeout_ms) * 1'000'000;
        for (auto& [fd, conn] : conns_) {
          conn->BeginClose();
          UpdateInterest(*conn);
        }
      }
      // Timeouts are coarse; scanning every connection on every wakeup would
      // put O(connections) work on the data path.
      const Nanos now = MonotonicNanos();
      if (stopping || now >= next_reap_) {
        ReapFinished(stopping, drain_deadline);
        next_reap_ = now + kReapIntervalNs;
        TrimMemory(now);
      }
      if (stopping && conns_.empty()) {
        inbox_->Close();
        return;
      }
      if (server_->credentials_->generation() != checked_generation_.load(std::memory_order_relaxed)) {
        RecheckCredentials();
      }
      // Connections with parsable requests already buffered run again
      // without waiting: their sockets may have nothing more to say.
      // So do puts deferred to the end of the last turn by the completions
      // it delivered.
      const int n = buffered_.empty() && turn_.empty() ? WaitForEvents(events)
                                                       : ::epoll_wait(epoll_.get(), events, 128, 0);
      if (server_->options_.loads_first) {
        ServeLoadsFirst(events, n);
      } else {
        RunBuffered();
        for (int i = 0; i < n; ++i) Serve(events[i]);
      }
      FinishTurn();
    }
  }

  // Nothing to do: polls for up to the IdlePoll window, yielding the core to
  // any thread ready to run on it between polls, then sleeps (at most 250 ms,
  // for the timeouts above).
  int WaitForEvents(epoll_event* events) {
    const Nanos window = idle_poll_.window_ns();
    const Nanos start = MonotonicNanos();
    ServerMetrics& metrics = server_->metrics_;
    int n = 0;
    if (window > 0) {
      n = ::epoll_wait(epoll_.get(), events, 128, 0);
      if (n > 0) return n;  // not idle
      Nanos polled = 0;
      while (n == 0 && (polled = MonotonicNanos() - start) < window) {
        ::sched_yield();
        n = ::epoll_wait(epoll_.get(), events, 128, 0);
      }
      metrics.idle_poll_ns.Add(uint64_t(polled));
    }
    if (n > 0) {
      metrics.idle_spells_polled.Add(1);
    } else {
      metrics.idle_spells_slept.Add(1);
      n = ::epoll_wait(epoll_.get(), events, 128, 250);
    }
    idle_poll_.OnIdle(MonotonicNanos() - start);
    return n;
  }

  // The small puts this turn's connections deferred (TieredStore,
  // "Completion"): one drive commit for all of them, then their answers.
  void FinishTurn() {
    if (turn_.empty()) return;
    Deliver(server_->store_->FinishTurn(turn_));
  }

  // One turn of the connection (or the wakeup) an event names.
  void Serve(const epoll_event& event) {
    const int fd = event.data.fd;
    if (fd == wake_.get()) {
      uint64_t v;
      ssize_t ignored = ::read(wake_.get(), &v, sizeof(v));
      (void)ignored;
      TakeIncoming();
      DeliverCompletions();
      return;
    }
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Session& conn = *it->second;
    // Input for a connection that was not reading: its input interest was
    // kept armed (UpdateInterest) and is dropped now.
    const bool unread_input = (event.events & EPOLLIN) != 0 && !conn.PollsInput();
    bool keep = true;
    if (event.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) keep = conn.OnReadable();
    if (keep && (event.events & EPOLLOUT)) keep = conn.OnWritable();
    if (!keep || conn.Finished()) {
      Close(fd);
    } else {
      UpdateInterest(conn, /*keep_input=*/!unread_input);
      NoteBuffered(conn);
    }
  }

  // True when the event is a connection's that is receiving a put's value.
  bool StoreEvent(const epoll_event& event) const {
    auto it = conns_.find(event.data.fd);
    return it != conns_.end() && it->second->StoreClass();
  }

  // Loads before stores (network.loads_first; docs/operations.md): of the
  // ready connections, those waiting on a load (anything but a put's value
  // in progress) and the wakeup are served first, then those receiving a
  // value, one turn each, which takes at most kStoreTurnBytes of it. Before
  // each of those turns the worker looks again (epoll_wait, no wait) and
  // serves the connections that became ready meanwhile and wait on a load;
  // the store-class ones it sees then are left to the next round (epoll is
  // level-triggered: they are reported again).
  void ServeLoadsFirst(epoll_event* events, int n) {
    std::vector<epoll_event>& stores = store_events_;
    stores.clear();
    uint64_t loads = 0;
    for (int i = 0; i < n; ++i) {
      if (StoreEvent(events[i])) {
        stores.push_back(events[i]);
        continue;
      }
      if (events[i].data.fd != wake_.get()) ++loads;
      Serve(events[i]);
    }
    RunBuffered();
    if (!stores.empty()) server_->metrics_.loads_served_first.Add(loads);
    for (size_t i = 0; i < stores.size(); ++i) {
      if (i > 0) {
        epoll_event ready[128];
        const int m = ::epoll_wait(epoll_.get(), ready, 128, 0);
        for (int j = 0; j < m; ++j) {
          if (StoreEvent(ready[j])) continue;
          if (ready[j].data.fd != wake_.get()) server_->metrics_.loads_served_first.Add(1);
          Serve(ready[j]);
        }
      }
      Serve(stores[i]);
    }
  }

  // A reload replaced the credentials: each connection keeps running under
  // its key's new flags, or is revoked (closed now when idle, else after
  // answering its next request AuthFailed; ReapFinished closes it once idle).
  void RecheckCredentials() {
    const uint64_t generation = server_->credentials_->generation();
    const std::shared_ptr<const Credentials> now = server_->credentials_->Current();
    uint64_t revoked = 0;
    std::vector<int> to_close;
    for (auto& [fd, conn] : conns_) {
      if (!conn->RecheckCredential(*now)) ++revoked;
      if (conn->RevokedAndIdle()) to_close.push_back(fd);
    }
    for (int fd : to_close) Close(fd);
    server_->credentials_revoked_.fetch_add(revoked, std::memory_order_acq_rel);
    {
      MutexLock lock(server_->recheck_mu_);
      checked_generation_.store(generation, std::memory_order_release);
    }
    server_->recheck_cv_.notify_all();
  }

  void NoteBuffered(Session& conn) {
    if (conn.HasBufferedRequests()) buffered_.push_back(conn.id());
  }

  // One turn for each connection that had parsable requests buffered when
  // it last ran (stopped at the in-flight limit, or out of budget).
  void RunBuffered() {
    std::vector<uint64_t> ids;
    ids.swap(buffered_);
    for (uint64_t id : ids) {
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;
      Session& conn = *it->second;
      if (!conn.HasBufferedRequests()) continue;  // a duplicate, or already run
      if (!conn.OnReadable() || conn.Finished()) {
        Close(conn.fd());
      } else {
        UpdateInterest(conn);
        NoteBuffered(conn);
      }
    }
  }

  void TakeIncoming() {
    std::vector<std::pair<UniqueFd, std::string>> incoming;
    {
      MutexLock lock(mu_);
      incoming.swap(incoming_);
    }
    for (auto& [fd, peer] : incoming) {
      if (!Admit(peer)) continue;  // fd closes here
      int raw = fd.get();
      auto conn = std::make_unique<Session>(next_id_++, std::move(fd), std::move(peer), ctx_, MonotonicNanos());
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = raw;
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, raw, &ev) != 0) {
        LOG_ERROR_C("server") << "epoll_ctl(ADD) for " << conn->peer() << ": " << std::strerror(errno);
        continue;
      }
      interest_[raw] = EPOLLIN;
      by_id_[conn->id()] = conn.get();
      unauthenticated_order_.push_back(conn->id());
      Session& session = *conn;
      conns_.emplace(raw, std::move(conn));
      // A client that sent its Connect right behind the connect authenticates
      // now, before a flood accepted in the same batch could shed it.
      if (!session.OnReadable() || session.Finished()) {
        Close(raw);
      } else {
        UpdateInterest(session);
        NoteBuffered(session);
      }
    }
  }

  // Storage operations that waited on a drive completed for connections of
  // this worker: answer and resume them. Completions for connections closed
  // meanwhile are dropped (with the pins and reservations they hold).
  void DeliverCompletions() { Deliver(inbox_->Take()); }

  void Deliver(std::vector<std::pair<uint64_t, tier::CompletionInbox::Closure>> completions) {
    for (auto& [id, done] : completions) {
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;
      Session& conn = *it->second;
      if (!conn.OnStorageDone(done) || conn.Finished()) {
        Close(conn.fd());
      } else {
        UpdateInterest(conn);
        NoteBuffered(conn);
      }
    }
  }

  // Reserves a slot under network.max_connections and
  // network.max_unauthenticated_connections; false (counted, logged) when
  // one is reached and the connection must be closed at once. At the
  // unauthenticated limit this worker's oldest unauthenticated connection is
  // closed to make room (shed), so a flood of connections that never
  // authenticate cannot keep a prompt client out: it is refused only when
  // this worker holds no unauthenticated connection to shed.
  bool Admit(const std::string& peer) {
    ConnectionLimits& limits = server_->limits_;
    for (;;) {
      switch (limits_.TryAdmit()) {
        case ConnectionLimits::Refusal::kNone:
          return true;
        case ConnectionLimits::Refusal::kMaxConnections:
          server_->metrics_.connections_refused_max_connections.Add(1);
          LOG_WARN_EVERY_C("server", 10) << "refusing connection from " << peer << ": " << limits.open()
                                         << " connections are open, the limit network.max_connections is "
                                         << limits.max_connections();
          return false;
        case ConnectionLimits::Refusal::kMaxUnauthenticated:
          if (ShedOldestUnauthenticated()) continue;
          server_->metrics_.connections_refused_max_unauthenticated.Add(1);
          LOG_WARN_EVERY_C("server", 10) << "refusing connection from " << peer << ": " << limits.unauthenticated()
                                         << " connections have not authenticated yet, the limit "
                                            "network.max_unauthenticated_connections is "
                                         << limits.max_unauthenticated();
          return false;
      }
      return false;
    }
  }

  // Closes this worker's oldest connection that has not authenticated yet;
  // false when it has none.
  bool ShedOldestUnauthenticated() {
    while (!unauthenticated_order_.empty()) {
      const uint64_t id = unauthenticated_order_.front();
      unauthenticated_order_.pop_front();
      auto it = by_id_.find(id);
      if (it == by_id_.end() || it->second->authenticated()) continue;  // closed or authenticated since
      // A Connect that arrived but has not been read yet is read first: a
      // client that sent it in time is never shed for the worker's delay.
      Session& victim = *it->second;
      if (!victim.OnReadable() || victim.Finished()) {
        Close(victim.fd());  // gone, or refused: its slot is free now
        return true;
      }
      if (victim.authenticated()) {
        UpdateInterest(victim);
        NoteBuffered(victim);
        continue;
      }
      server_->metrics_.connections_shed.Add(1);
      MEMKV_LOG_EVERY_C(kInfo, 10, "server")
          << "closing " << it->second->peer() << ": not authenticated yet, shed to admit a newer connection "
          << "(network.max_unauthenticated_connections " << server_->limits_.max_unauthenticated() << " reached)";
      Close(it->second->fd());
      return true;
    }
    return false;
  }

  // Input interest is dropped lazily: a connection that stops reading (a put
  // parked until its drive commit) keeps EPOLLIN armed, so a client with one
  // request in flight per connection, which sends nothing until the answer,
  // costs no epoll_ctl to park and none to resume. Only when input arrives
  // meanwhile (Serve sees it, with keep_input false) is EPOLLIN dropped, and
  // armed again once the connection reads.
  void UpdateInterest(Session& conn, bool keep_input = true) {
    uint32_t want = (conn.PollsInput() ? EPOLLIN : 0u) | (conn.WantsWrite() ? EPOLLOUT : 0u);
    uint32_t& have = interest_[conn.fd()];
    if (keep_input && !conn.closing()) want |= have & EPOLLIN;
    if (want == have) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.fd = conn.fd();
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, conn.fd(), &ev);
    have = want;
  }

  // Closes connections that never authenticated in time, stopped reading
  // their answers, held a grant or a frame in progress too long, and during a
  // drain those that are done or out of time.
  void ReapFinished(bool stopping, Nanos drain_deadline) {
    const Nanos now = MonotonicNanos();
    const Nanos handshake_ns = Nanos(server_->options_.handshake_timeout_ms) * 1'000'000;
    const Nanos stall_ns = Nanos(server_->options_.write_stall_timeout_ms) * 1'000'000;
    std::vector<int> to_close;
    size_t unauthenticated = 0;
    for (auto& [fd, conn] : conns_) {
      if (!conn->authenticated()) ++unauthenticated;
      bool idle = !conn->authenticated() && now - conn->accepted_at() > handshake_ns;
      bool stalled = conn->WriteStalled(now, stall_ns);
      bool drained = stopping && (conn->Finished() || now > drain_deadline);
      bool lease_expired = !conn->CheckGrantLeases(now);
      bool frame_expired = !drained && !conn->CheckFrameDeadline(now);
      bool revoked = conn->RevokedAndIdle();  // its key was removed by a reload
      conn->TrimIdle(now);
      if (idle) {
        MEMKV_LOG_EVERY_C(kInfo, 10, "server") << "closing " << conn->peer() << ": no Connect within "
                 << server_->options_.handshake_timeout_ms << " ms";
        server_->metrics_.connections_closed_idle.Add(1);
      } else if (stalled && !drained) {
        LOG_WARN_EVERY_C("server", 10) << "closing " << conn->peer() << ": it has not read its responses for "
                 << server_->options_.write_stall_timeout_ms << " ms";
        server_->metrics_.connections_closed_stalled.Add(1);
      }
      if (idle || stalled || drained || lease_expired || frame_expired || revoked) to_close.push_back(fd);
    }
    for (int fd : to_close) Close(fd);
    // The shedding order keeps ids of connections that authenticated or
    // closed since; drop them once they outnumber the live ones.
    if (unauthenticated_order_.size() > 2 * unauthenticated + 64) {
      std::deque<uint64_t> live;
      for (uint64_t id : unauthenticated_order_) {
        auto it = by_id_.find(id);
        if (it != by_id_.end() && !it->second->authenticated()) live.push_back(id);
      }
      unauthenticated_order_.swap(live);
    }
  }

  void Close(int fd) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    interest_.erase(fd);
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    by_id_.erase(it->second->id());
    conns_.erase(it);
    ++closed_since_trim_;
  }

  void TrimMemory(Nanos now) {
    if (closed_since_trim_ < kClosedBeforeTrim || now - last_trim_ < kTrimIntervalNs) return;
    closed_since_trim_ = 0;
    last_trim_ = now;
    if (conns_.empty()) {
      // The tables' bucket arrays never shrink on their own.
      std::unordered_map<int, std::unique_ptr<Session>>().swap(conns_);
      std::unordered_map<int, uint32_t>().swap(interest_);
      std::unordered_map<uint64_t, Session*>().swap(by_id_);
    }
    ::malloc_trim(0);
  }

  Server* server_;
  const std::string name_;  // the thread's (docs/threads.md)
  ConnectionLimits limits_;  // this worker's share of the Server's
  UniqueFd epoll_;
  UniqueFd wake_;
  SessionContext ctx_;
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> checked_generation_{0};  // of the credentials its connections were last checked against
  std::thread thread_;
  Mutex mu_;
  std::vector<std::pair<UniqueFd, std::string>> incoming_ MEMKV_GUARDED_BY(mu_);
  // Owned by the worker thread only.
  std::unordered_map<int, std::unique_ptr<Session>> conns_;
  std::unordered_map<int, uint32_t> interest_;
  std::unordered_map<uint64_t, Session*> by_id_;
  uint64_t next_id_ = 1;
  std::shared_ptr<tier::CompletionInbox> inbox_;
  tier::TurnCommits turn_;  // FinishTurn
  IdlePoll idle_poll_{Nanos(server_->options_.busy_poll_us) * 1000};  // WaitForEvents
  Nanos next_reap_ = 0;
  std::vector<uint64_t> buffered_;  // connection ids for RunBuffered
  std::vector<epoll_event> store_events_;  // ServeLoadsFirst's scratch
  // Ids in accept order of the connections that may not have authenticated
  // yet (stale ids are skipped): the shedding order, oldest first.
  std::deque<uint64_t> unauthenticated_order_;
  uint64_t closed_since_trim_ = 0;
  Nanos last_trim_ = 0;
};

Server::Server(const ServerOptions& options, tier::TieredStore* store, UniqueFd listener, uint16_t port)
    : options_(options),
      store_(store),
      listener_(std::move(listener)),
      port_(port),
      limits_(options.max_connections, options.max_unauthenticated_connections),
      credentials_(options.credentials) {}

Server::~Server() {
  Stop();
  for (auto& w : workers_) w->Join();
}

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options, tier::TieredStore* store) {
  if (store == nullptr) return InvalidArgument("a server needs a store");
  if (options.auth_key.size() != 32) return InvalidArgument("auth key must be 32 bytes");
  if (options.max_connections == 0 || options.max_unauthenticated_connections == 0) {
    return InvalidArgument("max_connections and max_unauthenticated_connections must be at least 1");
  }
  if (options.frame_timeout_ms == 0) return InvalidArgument("frame_timeout_ms must be at least 1");
  if (options.max_value_bytes == 0 || options.max_value_bytes > proto::kMaxValueBytesCeiling) {
    return InvalidArgument("max_value_bytes " + std::to_string(options.max_value_bytes) + " is out of range 1.." +
                           std::to_string(proto::kMaxValueBytesCeiling));
  }
  MEMKV_ASSIGN_OR_RETURN(UniqueFd listener, io::ListenTcp(options.host, options.port, 1024));
  MEMKV_ASSIGN_OR_RETURN(uint16_t port, io::LocalPort(listener.get()));
  std::unique_ptr<Server> server(new Server(options, store, std::move(listener), port));
  if (server->credentials_ == nullptr) {
    MEMKV_ASSIGN_OR_RETURN(std::shared_ptr<const Credentials> admin_only,
                           Credentials::Create(options.auth_key, {}, options.tenant_stats));
    server->own_credentials_ = std::make_unique<CredentialStore>(std::move(admin_only));
    server->credentials_ = server->own_credentials_.get();
  }
  server->stop_event_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!server->stop_event_.valid()) return Internal(std::string("eventfd: ") + std::strerror(errno));
  int workers = options.workers;
  if (workers <= 0) workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  for (int i = 0; i < workers; ++i) server->workers_.push_back(std::make_unique<Worker>(server.get(), i, workers));
  return server;
}

Status Server::Run() {
  for (auto& w : workers_) MEMKV_RETURN_IF_ERROR(w->Start());
  size_t next = 0;
  Nanos paused_until = 0;  // accepts paused after running out of descriptors or memory
  while (!stopping_.load(std::memory_order_acquire)) {
    // While paused only the stop event is watched: the listener stays
    // readable with the connection accept(2) could not take, and polling it
    // would spin.
    const Nanos pause_left = paused_until - MonotonicNanos();
    const bool paused = pause_left > 0;
    pollfd fds[2] = {{stop_event_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    int rc = ::poll(fds, paused ? 1 : 2, paused ? static_cast<int>(pause_left / 1'000'000) + 1 : -1);
    if (rc < 0 && errno != EINTR) return Internal(std::string("poll(listener): ") + std::strerror(errno));
    if (paused || !(fds[1].revents & POLLIN)) continue;
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
          // Open connections are served meanwhile; new ones wait in the backlog.
          metrics_.accept_failures.Add(1);
          paused_until = MonotonicNanos() + kAcceptPauseNs;
          MEMKV_LOG_EVERY_C(kWarn, 10, "server")
              << "accept on port " << port_ << ": " << std::strerror(err) << "; pausing accepts for "
              << kAcceptPauseNs / 1'000'000 << " ms at a time (open-files limit " << OpenFilesLimit()
              << ": raise LimitNOFILE / ulimit -n, or close idle clients)";
        }
        break;
      }
      UniqueFd conn(fd);
      Status nodelay = io::SetNoDelay(conn.get());
      if (!nodelay.ok()) LOG_WARN_C("server") << nodelay.ToString();
      Status keepalive = SetKeepAlive(conn.get());
      if (!keepalive.ok()) LOG_WARN_C("server") << keepalive.ToString();
      workers_[next++ % workers_.size()]->Adopt(std::move(conn), PeerName(ss));
    }
  }
  listener_.Reset();
  for (auto& w : workers_) w->Join();
  return Status::Ok();
}

bool Server::RecheckCredentials(Nanos timeout_ns) {
  const uint64_t generation = credentials_->generation();
  for (auto& w : workers_) w->WakeUp();
  MutexLock lock(recheck_mu_);
  return lock.WaitFor(recheck_cv_, std::chrono::nanoseconds(timeout_ns), [&] {
    for (const auto& w : workers_) {
      if (w->running() && w->checked_generation() < generation) return false;
    }
    return true;
  });
}

void Server::Stop() {
  if (stopping_.exchange(true, std::memory_order_acq_rel)) return;
  if (stop_event_.valid()) Wake(stop_event_.get());
}

}  // namespace memkv::server
