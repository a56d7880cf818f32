// Membership (membership.h): the views, the refresher and the routing rules.
#include "client/membership.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/log.h"
#include "base/thread_name.h"
#include "client/connection.h"
#include "client/ops.h"

namespace memkv::client {

namespace {

constexpr std::string_view kDuplicateHint = "probably the same data directory or drive copied";

// How often the refresher looks at pending and down servers when the
// interval is longer (or 0): the pools' initial backoff, so a server that
// starts late is placed within about that long.
constexpr Nanos kPendingRetryNanos = ServerHealth::kInitialBackoffNanos;

}  // namespace

Status View::Unavailable() const {
  if (members.empty()) return memkv::Unavailable("no servers: the server list resolved to none");
  // When every server failed alike (all refused our key, all timed out),
  // that is the answer, as it would be from one server; else Unavailable.
  std::optional<StatusCode> code;
  std::string text;
  for (const Member& m : members) {
    std::string why = m.probe.ok() ? m.detail : m.probe.message();
    if (why.empty() && !m.pool->Down(&why)) why = "not reached yet";
    const StatusCode c = m.probe.ok() ? StatusCode::kUnavailable : m.probe.code();
    code = !code || *code == c ? c : StatusCode::kUnavailable;
    text += (text.empty() ? "" : "; ") + (members.size() == 1 ? why : m.server.name + ": " + why);
  }
  if (members.size() > 1) text = "no server can be reached: " + text;
  return Status(*code, text);
}

// ---- Router ----

bool Router::Usable(size_t server, Purpose purpose) const {
  const ServerPool& pool = *view_.pools[server];
  if (pool.Down()) return false;
  return purpose != Purpose::kWrite || !pool.draining();
}

size_t Router::First(std::string_view key, Purpose purpose) const {
  const Placement& placement = *view_.placement;
  const size_t owner = placement.ServerFor(key);
  if (Usable(owner, purpose)) return owner;  // the common case: no sort
  for (size_t server : placement.Order(key)) {
    if (Usable(server, purpose)) return server;
  }
  return owner;
}

std::optional<size_t> Router::Next(std::string_view key, Purpose purpose, size_t after) const {
  const std::vector<size_t> order = view_.placement->Order(key);
  auto at = std::find(order.begin(), order.end(), after);
  if (at == order.end()) return std::nullopt;
  for (++at; at != order.end(); ++at) {
    if (Usable(*at, purpose)) return *at;
  }
  return std::nullopt;
}

bool Router::MissNeedsSecondLook(size_t server) const {
  const ServerPool& pool = *view_.pools[server];
  if (pool.draining()) return true;
  const Nanos joined = pool.joined_at();
  return grace_ > 0 && joined != 0 && MonotonicNanos() - joined < grace_;
}

bool Router::PutGoesElsewhere(ServerPool& pool, const Status& status, ClientCounters& counters) {
  switch (status.code()) {
    case StatusCode::kOk:
      pool.set_busy(false);
      return false;
    case StatusCode::kDraining:
      if (!pool.draining()) {
        LOG_INFO_C("client") << "server " << pool.endpoint().name
                             << " is draining (it answered a put Draining); new keys go to the next server";
      }
      pool.set_draining(true);
      return true;
    case StatusCode::kBusy:
      // Back-pressure, not a failure: the caller skips this store. Storing
      // the key elsewhere would put it where no get looks for it.
      pool.set_busy(true);
      ClientCounters::Add(counters.stores_shed, 1);
      return false;
    case StatusCode::kUnavailable:
      return true;
    default:
      return false;
  }
}

Router::Followup Router::AfterFirst(size_t server, Purpose purpose, const Status& status,
                                   ClientCounters& counters) const {
  if (purpose == Purpose::kWrite) {
    return PutGoesElsewhere(*view_.pools[server], status, counters) ? Followup::kElsewhere : Followup::kNone;
  }
  if (Unreached(status)) return Followup::kElsewhere;
  const bool answered = status.ok() || status.code() == StatusCode::kNotFound;
  if (purpose == Purpose::kDelete) return answered && MissNeedsSecondLook(server) ? Followup::kSecondLook : Followup::kNone;
  return status.code() == StatusCode::kNotFound && MissNeedsSecondLook(server) ? Followup::kSecondLook
                                                                               : Followup::kNone;
}

Status Router::Combine(Followup followup, Purpose purpose, size_t next, Status first, Status second,
                       ClientCounters& counters) const {
  if (purpose == Purpose::kWrite) {
    ClientCounters::Add(counters.fallback_writes, 1);
    PutGoesElsewhere(*view_.pools[next], second, counters);
    return second;
  }
  if (followup == Followup::kElsewhere) {
    // The owner is unreachable: its keys become misses, not errors, while
    // another server answers.
    ClientCounters::Add(counters.fallback_reads, 1);
    if (second.code() == StatusCode::kNotFound) {
      return NotFound("not found (its server is unreachable: " + first.message() + ")");
    }
    return Unreached(second) ? first : second;
  }
  if (purpose == Purpose::kDelete) return first.ok() ? first : second.ok() ? second : first;
  ClientCounters::Add(counters.grace_lookups, 1);
  if (second.ok()) {
    ClientCounters::Add(counters.grace_hits, 1);
    return second;
  }
  return first;
}

// ---- Membership ----

Result<std::unique_ptr<Membership>> Membership::Start(Settings settings, std::unique_ptr<Resolver> resolver,
                                                      PoolFactory pools, ClientCounters* counters) {
  std::unique_ptr<Membership> m(new Membership(std::move(settings), std::move(resolver), std::move(pools), counters));
  m->Refresh(/*resolve=*/true);
  m->thread_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

Membership::~Membership() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const View> Membership::Current() const {
  MutexLock lock(mu_);
  return current_;
}

std::shared_ptr<const View> Membership::RefreshIfEmpty() {
  std::shared_ptr<const View> view = Current();
  if (view->placement.has_value()) return view;
  Refresh(/*resolve=*/false);
  return Current();
}

void Membership::Loop() {
  SetThreadName("memkv-discovery");
  const Nanos interval = Nanos{settings_.discovery_interval_ms} * 1'000'000;
  Nanos last_resolve = MonotonicNanos();
  MutexLock lock(mu_);
  while (!stopping_) {
    // Pending or down servers are looked at on their backoff; the whole
    // list every interval.
    const bool waiting = std::any_of(current_->members.begin(), current_->members.end(),
                                     [](const Member& m) { return m.id.empty() || m.pool->Failing(); });
    Nanos wait = interval > 0 ? interval - (MonotonicNanos() - last_resolve) : kPendingRetryNanos;
    if (waiting) wait = std::min(wait, kPendingRetryNanos);
    if (interval == 0 && !waiting) wait = kPendingRetryNanos * 5;
    lock.WaitFor(wake_, std::chrono::nanoseconds(std::max<Nanos>(wait, 1'000'000)));
    if (stopping_) break;
    lock.Unlock();
    const bool due = interval > 0 && MonotonicNanos() - last_resolve >= interval;
    if (due) last_resolve = MonotonicNanos();
    Refresh(/*resolve=*/due);
    lock.Lock();
  }
}

void Membership::AskServerInfo(std::vector<Member>& members, bool only_pending) {
  // One connection per server, every request driven in one poll loop, so a
  // server that does not answer costs one wait, not one per server. The
  // round is an operation like any other: its connections have
  // connect_timeout_ms to connect and authenticate, the answer comes within
  // timeout_ms, and a failure names the knob of the deadline that passed.
  const Nanos deadline = MonotonicNanos() + Nanos{settings_.timeout_ms} * 1'000'000;
  struct Ask {
    Member* member;
    std::vector<std::unique_ptr<Connection>> conns;
    std::unique_ptr<ServerInfoExchange> x;
  };
  std::vector<Ask> asks;
  std::vector<Connection*> driven;
  for (Member& m : members) {
    // Down: still backing off; asked once the backoff runs out (keeping
    // the reason it failed, which a fast "marked down" would only hide).
    if (m.pool->Down()) continue;
    if (only_pending && !m.id.empty() && !m.pool->Failing()) continue;
    // A server that predates ServerInfo is not asked again while it stays
    // up (each ask costs it a protocol error); after it was down it may be
    // a newer server, and is asked by the probe above.
    if (!only_pending && m.legacy && !m.pool->Failing()) continue;
    auto conns = m.pool->Acquire(1, deadline, /*wait=*/false);
    if (!conns.ok()) {
      if (m.id.empty()) {
        m.detail = conns.status().ToString();
        m.probe = conns.status();
      }
      continue;
    }
    if (conns->empty()) continue;  // every connection busy: it is in use, so it is up; ask next time
    Ask ask{&m, std::move(conns).value(), std::make_unique<ServerInfoExchange>(m.server.name)};
    ask.conns.front()->Enqueue(ask.x.get());
    driven.push_back(ask.conns.front().get());
    asks.push_back(std::move(ask));
  }
  if (!driven.empty()) DriveConnections(driven, deadline);
  for (Ask& ask : asks) {
    Member& m = *ask.member;
    if (ask.conns.front()->WasReady()) m.max_value_bytes = ask.conns.front()->max_value_bytes();
    ask.member->pool->Release(std::move(ask.conns));
    const Status& s = ask.x->status();
    std::string id;
    if (s.ok()) {
      id = ask.x->info().id;
      m.legacy = false;
      m.announced_weight = ask.x->info().weight != 0 ? ask.x->info().weight : ask.x->info().capacity_bytes;
      m.pool->set_draining(ask.x->info().draining);
      m.pool->set_busy(ask.x->info().busy);
    } else if (IsUnknownOpcode(s)) {
      // An older server: placed by its address, as before ids existed.
      id = CanonicalServerId(m.server.host, m.server.port);
      m.legacy = true;
      m.announced_weight = 0;
    } else {
      if (m.id.empty()) {
        m.detail = s.ToString();
        m.probe = s;
      }
      continue;
    }
    if (!m.id.empty() && m.id != id) {
      ClientCounters::Add(counters_->server_problems, 1);
      LOG_WARN_C("client") << "server " << m.server.name << " now reports id " << id << ", was " << m.id
                           << ": a different data directory or a reformatted drive; its keys move";
    }
    m.id = std::move(id);
    m.detail.clear();
    m.probe = Status::Ok();
  }
}

std::shared_ptr<View> Membership::Build(std::vector<Member> members, const View* previous, Nanos now) {
  auto view = std::make_shared<View>();
  // Members stay in the order of the server list (so with a list of
  // addresses, ServerFor's index is the index into it); placement does not
  // depend on the order. Of two members with one id, the first in name
  // order keeps it, so every client agrees which one is the duplicate.
  std::vector<size_t> by_name(members.size());
  for (size_t i = 0; i < members.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(),
            [&](size_t a, size_t b) { return members[a].server.name < members[b].server.name; });
  std::map<std::string, const Member*> owner_of;
  for (size_t i : by_name) {
    Member& m = members[i];
    m.duplicate = false;
    if (m.id.empty()) continue;
    auto [at, inserted] = owner_of.emplace(m.id, &m);
    if (!inserted) {
      m.duplicate = true;
      m.detail = "server " + m.server.name + " reports id " + m.id + ", which " + at->second->server.name +
                 " also reports: " + std::string(kDuplicateHint) + "; it is left out of placement";
    } else if (m.detail.find(std::string(kDuplicateHint)) != std::string::npos) {
      m.detail.clear();
    }
  }
  std::vector<std::string> names, ids;
  std::vector<uint64_t> weights;
  bool all_weighted = true;
  for (Member& m : members) {
    m.placed = Member::kNotPlaced;
    if (m.id.empty() || m.duplicate) continue;
    m.placed = names.size();
    names.push_back(m.server.name);
    ids.push_back(m.id);
    weights.push_back(m.announced_weight);
    all_weighted = all_weighted && m.announced_weight != 0;
  }
  // One member without a weight (an older server) makes them all equal, so
  // every client, whichever servers it has heard from, agrees.
  if (!all_weighted) weights.clear();
  if (!names.empty()) {
    Result<Placement> placement = Placement::Create(names, ids, weights);
    if (placement.ok()) view->placement = std::move(placement).value();
  }
  // A member that was not placed in the previous view joins now: the keys
  // it takes over are still on their previous owners for a while.
  std::set<std::string> placed_before;
  if (previous != nullptr) {
    for (const Member& m : previous->members) {
      if (m.placed != Member::kNotPlaced) placed_before.insert(m.server.name + "/" + m.id);
    }
  }
  view->member_of.resize(names.size());
  view->pools.resize(names.size());
  for (size_t i = 0; i < members.size(); ++i) {
    Member& m = members[i];
    if (m.placed == Member::kNotPlaced) continue;
    if (previous != nullptr && !placed_before.count(m.server.name + "/" + m.id)) m.pool->set_joined_at(now);
    view->member_of[m.placed] = i;
    view->pools[m.placed] = m.pool;
  }
  view->members = std::move(members);
  return view;
}

void Membership::Publish(std::shared_ptr<View> view) {
  MutexLock lock(mu_);
  // Published only when placement would differ: the members placed, their
  // ids and weights, or who is a duplicate or pending.
  auto key = [](const View& v) {
    std::string k;
    for (const Member& m : v.members) {
      k += m.server.name + "|" + m.server.source + "|" + m.id + "|" + std::to_string(m.announced_weight) + "|" +
           (m.duplicate ? "d" : "") + "|" + m.detail + ";";
    }
    return k;
  };
  if (current_ != nullptr && key(*current_) == key(*view)) return;
  const bool placement_changed =
      current_ == nullptr || [&]() MEMKV_REQUIRES(mu_) {
        std::string a, b;
        for (const Member& m : current_->members) {
          if (m.placed != Member::kNotPlaced) a += m.server.name + m.id + std::to_string(m.announced_weight) + ";";
        }
        for (const Member& m : view->members) {
          if (m.placed != Member::kNotPlaced) b += m.server.name + m.id + std::to_string(m.announced_weight) + ";";
        }
        return a != b;
      }();
  if (current_ != nullptr && placement_changed) ClientCounters::Add(counters_->placement_changes, 1);
  view->version = current_ == nullptr ? 1 : current_->version + 1;
  for (const Member& m : view->members) {
    if (!m.duplicate) continue;
    bool known = false;
    if (current_ != nullptr) {
      for (const Member& old : current_->members) known = known || (old.server.name == m.server.name && old.duplicate);
    }
    if (!known) {
      ClientCounters::Add(counters_->server_problems, 1);
      LOG_WARN_C("client") << m.detail;
    }
  }
  current_ = std::move(view);
}

void Membership::Refresh(bool resolve) {
  MutexLock refresh(refresh_mu_);
  std::shared_ptr<const View> previous = Current();
  std::vector<Member> members;
  if (previous != nullptr) members = previous->members;
  if (resolve || previous == nullptr) {
    // Each entry on its own, so a failed lookup keeps that entry's last
    // servers and hides nothing the others name.
    std::vector<ResolvedServer> servers;
    for (size_t e = 0; e < settings_.entries.size(); ++e) {
      std::vector<Status> errors;
      std::vector<ResolvedServer> found =
          resolver_->Resolve(std::span(&settings_.entries[e], 1), settings_.resolve_timeout_ms, &errors);
      if (!errors.empty()) {
        std::string text;
        for (const Status& s : errors) text += (text.empty() ? "" : "; ") + s.ToString();
        if (text != last_error_[e]) {
          LOG_WARN_C("client") << "server list entry " << settings_.entries[e].text << ": " << text
                               << (last_resolved_[e].empty() ? "" : "; keeping the servers it named before");
          last_error_[e] = text;
        }
        if (found.empty()) found = last_resolved_[e];
      } else {
        last_error_[e].clear();
      }
      last_resolved_[e] = found;
      servers.insert(servers.end(), found.begin(), found.end());
    }
    std::map<std::string, Member> by_name;
    for (Member& m : members) by_name.emplace(m.server.name, std::move(m));
    members.clear();
    std::set<std::string> seen;
    for (const ResolvedServer& s : servers) {
      if (!seen.insert(s.name).second) continue;
      auto it = by_name.find(s.name);
      if (it != by_name.end()) {
        Member m = std::move(it->second);
        m.server = s;
        members.push_back(std::move(m));
      } else {
        Member m;
        m.server = s;
        m.pool = make_pool_(s);
        members.push_back(std::move(m));
      }
    }
  }
  AskServerInfo(members, /*only_pending=*/!resolve && previous != nullptr);
  Publish(Build(std::move(members), previous.get(), MonotonicNanos()));
}

std::vector<ServerView> Membership::Servers() const {
  std::shared_ptr<const View> view = Current();
  std::vector<ServerView> out;
  for (const Member& m : view->members) {
    ServerView v;
    v.name = m.server.name;
    v.source = m.server.source;
    v.id = m.id;
    v.max_value_bytes = m.max_value_bytes;
    std::string why;
    if (m.placed != Member::kNotPlaced) {
      v.weight = view->placement->weight(m.placed);
      v.share = view->placement->share(m.placed);
    }
    if (m.duplicate) {
      v.state = "duplicate";
      v.detail = m.detail;
    } else if (m.id.empty()) {
      v.state = "pending";
      v.detail = m.detail.empty() ? "not reached yet" : m.detail;
    } else if (m.pool->Down(&why)) {
      v.state = "down";
      v.detail = why;
    } else if (m.pool->draining()) {
      v.state = "draining";
      v.detail = "takes no new keys; its keys are still read";
    } else if (m.pool->busy()) {
      v.state = "busy";
      v.detail = "shedding puts (answers them Busy)";
    } else {
      v.state = "up";
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace memkv::client
