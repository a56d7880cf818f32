// Membership: the servers a client places keys on, as they come and go
// (docs/fleet.md, "Placement", "Rebalancing after a join", "Health and
// back-pressure").
//
// A View is an immutable snapshot: every server the server list names
// (resolved), what the client knows of each (its id, weight, state) and the
// weighted rendezvous Placement over the ones whose id is known and unique.
// A call takes the current view once and uses it throughout (a batch too),
// so a view swapped meanwhile never mixes two placements in one call; the
// pools are shared between views, so a server that stays keeps its
// connections, and a server that left is closed when the last call holding
// an old view lets go.
//
// The refresher thread builds the views: at start it resolves the list and
// asks every server its ServerInfo in parallel; then every
// discovery_interval_ms it resolves again, asks every server again (its
// draining and busy flags, its weight), and publishes a new view only when
// something placement depends on changed. Servers it could not reach are
// "pending" and asked again on their pool's backoff, also with
// discovery_interval_ms 0, so a server that starts late is used.
//
// Health that changes between refreshes (down, draining, busy) lives in
// each server's ServerPool, not in the view, so a call that learns it (a
// connect refused, a Draining answer) tells every later call at once.
//
// Thread-safety: Current() and the routing helpers from any thread; the
// refresher is the only writer.
#ifndef MEMKV_CLIENT_MEMBERSHIP_H_
#define MEMKV_CLIENT_MEMBERSHIP_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "client/counters.h"
#include "client/discovery.h"
#include "client/placement.h"
#include "client/pool.h"
#include "config/server_source.h"
#include "memkv/client.h"

namespace memkv::client {

struct Member {
  ResolvedServer server;
  std::shared_ptr<ServerPool> pool;
  std::string id;           // empty: not known yet (pending)
  bool legacy = false;      // predates ServerInfo: id is its canonical address, no weight
  uint64_t announced_weight = 0;  // ServerInfo weight, else capacity_bytes; 0: none
  uint64_t max_value_bytes = 0;   // the value limit it announced at Connect; 0: not known yet
  bool duplicate = false;   // its id is an earlier member's (in name order)
  std::string detail;       // why it is pending or duplicate
  Status probe;             // pending: why the last ServerInfo got no answer
  size_t placed = kNotPlaced;  // index in the view's placement
  static constexpr size_t kNotPlaced = std::numeric_limits<size_t>::max();
};

struct View {
  std::vector<Member> members;             // in server-list order
  std::optional<Placement> placement;      // none while no member is placed
  std::vector<std::shared_ptr<ServerPool>> pools;  // by placement index
  std::vector<size_t> member_of;           // placement index -> member index
  uint64_t version = 0;

  // Why a call has no server to go to (no member placed): every server and
  // what became of it.
  Status Unavailable() const;
};

// What a key's call means to do on a server, which decides which servers
// of its rendezvous order it may use.
enum class Purpose {
  kRead,    // get, exists, stat: any server that is not down
  kWrite,   // put: not down and not draining
  kDelete,  // as kRead, and also on the next server while the owner is new or draining
};

// Routing over one view (shared by the single-key calls and BatchRunner).
class Router {
 public:
  Router(const View& view, Nanos rebalance_grace_nanos) : view_(view), grace_(rebalance_grace_nanos) {}

  // The placement index a key's call goes to first: the first server in
  // its rendezvous order usable for `purpose`, or its owner when none is
  // (the call then fails with the owner's reason).
  size_t First(std::string_view key, Purpose purpose) const;
  // The next usable server after `after` in the key's order; nullopt when
  // there is none.
  std::optional<size_t> Next(std::string_view key, Purpose purpose, size_t after) const;
  // A miss on `server` is asked again on the next server: it is draining
  // (its keys are being moved off it) or it joined within the grace window
  // (its keys may still be on the server that owned them before).
  bool MissNeedsSecondLook(size_t server) const;
  // After a put's answer from `server`: marks it draining on a Draining
  // answer, busy on Busy (counted in `counters.stores_shed`), not busy on
  // success. True when the put should go to the next server: the server is
  // draining or could not be reached.
  static bool PutGoesElsewhere(ServerPool& pool, const Status& status, ClientCounters& counters);
  // A read or delete that could not reach its server (down, refused, lost)
  // is asked of the next server.
  static bool Unreached(const Status& status) { return status.code() == StatusCode::kUnavailable; }

  // What a key's first answer, `status` from `server`, calls for: nothing
  // (it is the answer), the next server instead (a put to a draining or
  // unreachable server, a read of an unreachable one), or the next server
  // too (a miss on a draining or new owner: the key may still be on its
  // previous owner; a delete there also deletes it there).
  enum class Followup { kNone, kElsewhere, kSecondLook };
  Followup AfterFirst(size_t server, Purpose purpose, const Status& status, ClientCounters& counters) const;
  // The key's answer once `next` answered `second` (and counts it).
  Status Combine(Followup followup, Purpose purpose, size_t next, Status first, Status second,
                 ClientCounters& counters) const;

  // A single-key call along these rules: `attempt(server)` runs it on one
  // server (a placement index) and returns its status. The batches apply
  // the same AfterFirst / Combine per key, in a second round.
  template <typename Attempt>
  Status Route(std::string_view key, Purpose purpose, ClientCounters& counters, Attempt attempt) const {
    const size_t first = First(key, purpose);
    Status status = attempt(first);
    const Followup followup = AfterFirst(first, purpose, status, counters);
    if (followup == Followup::kNone) return status;
    const std::optional<size_t> next = Next(key, purpose, first);
    if (!next) return status;
    Status second = attempt(*next);
    return Combine(followup, purpose, *next, std::move(status), std::move(second), counters);
  }

  const View& view() const { return view_; }

 private:
  bool Usable(size_t server, Purpose purpose) const;
  const View& view_;
  const Nanos grace_;
};

// Builds a Member's pool (the client's settings: auth key, connections,
// timeouts, counters, RDMA).
using PoolFactory = std::function<std::shared_ptr<ServerPool>(const ResolvedServer& server)>;
// Makes the resolver (tests inject one; the client uses Resolver::Create).
using ResolverFactory = std::function<Result<std::unique_ptr<Resolver>>(const std::string& dns_server)>;

class Membership {
 public:
  struct Settings {
    std::vector<config::ServerSource> entries;
    uint32_t discovery_interval_ms = 10'000;
    uint32_t connect_timeout_ms = 1000;
    uint32_t resolve_timeout_ms = 2000;  // each entry's DNS lookup (Resolver::Resolve's budget)
    uint32_t timeout_ms = 5000;  // the operation's deadline: bounds each ServerInfo round
    uint32_t rebalance_grace_ms = 300'000;
  };
  // Resolves the list (each entry bounded by resolve_timeout_ms) and asks
  // every server its ServerInfo (each connection bounded by
  // connect_timeout_ms, the round by timeout_ms), builds the first view and starts the refresher.
  // Fails only when the resolver cannot be made (a bad dns_server).
  static Result<std::unique_ptr<Membership>> Start(Settings settings, std::unique_ptr<Resolver> resolver,
                                                   PoolFactory pools, ClientCounters* counters);
  ~Membership();  // stops the refresher

  std::shared_ptr<const View> Current() const;
  // A call that found no placed server asks the pending ones now (bounded
  // as at Start) before it answers Unavailable.
  std::shared_ptr<const View> RefreshIfEmpty();
  Nanos grace_nanos() const { return Nanos{settings_.rebalance_grace_ms} * 1'000'000; }

  // Every member as Client::Servers() shows it.
  std::vector<ServerView> Servers() const;

  // One refresh now (what the refresher does each interval); tests and the
  // refresher call it. `resolve`: also resolve the list again.
  void Refresh(bool resolve) MEMKV_EXCLUDES(refresh_mu_, mu_);

 private:
  Membership(Settings settings, std::unique_ptr<Resolver> resolver, PoolFactory pools, ClientCounters* counters)
      : settings_(std::move(settings)), resolver_(std::move(resolver)), make_pool_(std::move(pools)),
        counters_(counters), last_resolved_(settings_.entries.size()), last_error_(settings_.entries.size()) {}
  void Loop();
  // Asks each member its ServerInfo in parallel; fills id, weight, flags.
  void AskServerInfo(std::vector<Member>& members, bool only_pending);
  // Ids checked for duplicates, weights chosen, the placement built.
  std::shared_ptr<View> Build(std::vector<Member> members, const View* previous, Nanos now);
  void Publish(std::shared_ptr<View> view);

  Mutex refresh_mu_;  // one Refresh at a time (the refresher, a call)
  const Settings settings_;
  std::unique_ptr<Resolver> resolver_ MEMKV_PT_GUARDED_BY(refresh_mu_);
  const PoolFactory make_pool_;
  ClientCounters* const counters_;
  SteadyClock clock_;

  // The last servers each entry resolved to (a failed lookup keeps them)
  // and the last error logged per entry.
  std::vector<std::vector<ResolvedServer>> last_resolved_ MEMKV_GUARDED_BY(refresh_mu_);
  std::vector<std::string> last_error_ MEMKV_GUARDED_BY(refresh_mu_);

  mutable Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ MEMKV_GUARDED_BY(mu_) = false;
  std::shared_ptr<const View> current_ MEMKV_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_MEMBERSHIP_H_
