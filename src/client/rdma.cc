#include "client/rdma.h"

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "base/log.h"
#include "verbs/detect.h"

namespace memkv::client {
namespace {

constexpr uint32_t kSendQueueDepth = 128;  // WRs outstanding per QP
constexpr int kMinClassBits = 16;          // bounce buffers from 64 KiB up
constexpr size_t kPollBatch = 32;

int SizeClass(uint64_t size) {
  int bits = size <= 1 ? 0 : 64 - std::countl_zero(size - 1);
  return std::max(bits, kMinClassBits);
}

}  // namespace

// ---- BouncePool ----

BouncePool::~BouncePool() = default;

Result<BounceBuffer> BouncePool::Acquire(uint64_t size) {
  if (size > kMaxBufferBytes) {
    return InvalidArgument("RDMA bounce buffer of " + std::to_string(size) + " bytes asked for; the largest is " +
                           std::to_string(kMaxBufferBytes) + " (client bug: larger values move in pieces)");
  }
  const int size_class = SizeClass(size);
  MutexLock lock(mu_);
  std::vector<BounceBuffer>& free = free_[size_class];
  if (!free.empty()) {
    BounceBuffer b = free.back();
    free.pop_back();
    ++in_use_;
    return b;
  }
  const uint64_t capacity = uint64_t{1} << size_class;
  auto slab = std::make_unique<Slab>();
  void* memory = std::aligned_alloc(4096, capacity);
  if (memory == nullptr) {
    return ResourceExhausted("cannot allocate a " + std::to_string(capacity) + "-byte RDMA bounce buffer");
  }
  slab->memory = std::unique_ptr<uint8_t, void (*)(void*)>(static_cast<uint8_t*>(memory), std::free);
  MEMKV_ASSIGN_OR_RETURN(slab->registration, context_->Register(memory, capacity, /*remote=*/false));
  BounceBuffer b{slab->memory.get(), capacity, slab->registration->lkey(), size_class};
  slabs_.push_back(std::move(slab));
  ++in_use_;
  return b;
}

void BouncePool::Release(BounceBuffer buffer) {
  if (buffer.data == nullptr) return;
  MutexLock lock(mu_);
  free_[buffer.size_class].push_back(buffer);
  --in_use_;
}

size_t BouncePool::buffers_in_use() const {
  MutexLock lock(mu_);
  return in_use_;
}

// ---- RegistrationCache ----

namespace {

constexpr uintptr_t kPage = 4096;
// Caller registrations kept per device beyond the explicitly pinned ones.
constexpr uint64_t kCachedRegistrationBytes = 8ULL << 30;

}  // namespace

RegistrationCache::~RegistrationCache() = default;

RegistrationCache::Entry* RegistrationCache::Find(uint64_t id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.get();
}

void RegistrationCache::Drop(Entry* e) {
  bytes_ -= e->end - e->begin;
  entries_.erase(e->id);
  entry_count_.store(entries_.size(), std::memory_order_relaxed);
}

Result<RegistrationCache::Entry*> RegistrationCache::Register(uintptr_t begin, uintptr_t end, bool pinned) {
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<verbs::Registration> r,
                         context_->Register(reinterpret_cast<void*>(begin), end - begin, /*remote=*/false));
  auto e = std::make_unique<Entry>();
  e->begin = begin;
  e->end = end;
  e->registration = std::move(r);
  e->id = next_id_++;
  e->pinned = pinned;
  e->last_use = ++tick_;
  Entry* raw = e.get();
  bytes_ += end - begin;
  entries_[raw->id] = std::move(e);
  entry_count_.store(entries_.size(), std::memory_order_relaxed);
  return raw;
}

void RegistrationCache::Trim() {
  while (bytes_ > max_bytes_) {
    Entry* oldest = nullptr;
    for (auto& [id, e] : entries_) {
      if (e->users == 0 && !e->pinned && (oldest == nullptr || e->last_use < oldest->last_use)) oldest = e.get();
    }
    if (oldest == nullptr) return;
    Drop(oldest);
  }
}

std::optional<RegistrationCache::Lease> RegistrationCache::Acquire(const void* p, uint64_t n) {
  // A small value with nothing registered: the bounce pool, without the lock.
  if (n < kMinBytes && entry_count_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  MutexLock lock(mu_);
  // Registrations may overlap (two buffers sharing a page each get their
  // own); any valid one that covers the range serves, whatever its size: a
  // small value inside a region the caller registered moves with no copy.
  for (auto& [id, e] : entries_) {
    if (!e->invalid && e->begin <= addr && addr + n <= e->end) {
      ++e->users;
      e->last_use = ++tick_;
      return Lease{e->registration->lkey(), e->id};
    }
  }
  // Only large buffers are worth a registration of their own.
  if (n < kMinBytes) return std::nullopt;
  const uintptr_t begin = addr & ~(kPage - 1);
  const uintptr_t end = (addr + n + kPage - 1) & ~(kPage - 1);
  Result<Entry*> e = Register(begin, end, /*pinned=*/false);
  if (!e.ok()) return std::nullopt;  // memlock limit, say: the bounce pool still works
  ++(*e)->users;
  Trim();
  return Lease{(*e)->registration->lkey(), (*e)->id};
}

void RegistrationCache::Release(const Lease& lease) {
  if (lease.id == 0) return;
  MutexLock lock(mu_);
  Entry* e = Find(lease.id);
  if (e == nullptr) return;
  --e->users;
  if (e->users == 0 && e->invalid) {
    Drop(e);
    return;
  }
  Trim();
}

void RegistrationCache::Invalidate(const Lease& lease) {
  MutexLock lock(mu_);
  Entry* e = Find(lease.id);
  if (e != nullptr) e->invalid = true;
}

Status RegistrationCache::Pin(void* p, uint64_t n) {
  if (p == nullptr || n == 0) return InvalidArgument("RegisterMemory: empty region");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = addr & ~(kPage - 1);
  const uintptr_t end = (addr + n + kPage - 1) & ~(kPage - 1);
  MutexLock lock(mu_);
  for (auto& [id, e] : entries_) {
    if (e->pinned && e->begin == begin) {
      return FailedPrecondition("RegisterMemory: a region starting at this address is already registered");
    }
  }
  return Register(begin, end, /*pinned=*/true).status();
}

Status RegistrationCache::Unpin(void* p) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  MutexLock lock(mu_);
  for (auto& [id, e] : entries_) {
    if (!e->pinned || e->begin != begin) continue;
    e->pinned = false;
    e->invalid = true;  // no new transfers; dropped once unused
    if (e->users == 0) Drop(e.get());
    return Status::Ok();
  }
  return NotFound("UnregisterMemory: no region registered at this address");
}

uint64_t RegistrationCache::registered_bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

size_t RegistrationCache::leases() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [id, e] : entries_) n += static_cast<size_t>(e->users);
  return n;
}

// ---- RdmaChannel ----

RdmaChannel::RdmaChannel(std::unique_ptr<verbs::CompletionQueue> cq,
                         std::vector<std::unique_ptr<verbs::QueuePair>> qps, const verbs::Gid& gid,
                         const RdmaSettings& settings, uint32_t gid_index, BouncePool* bounce,
                         RegistrationCache* registrations, ClientCounters* counters)
    : cq_(std::move(cq)),
      qps_(std::move(qps)),
      posted_(qps_.size(), 0),
      gid_(gid),
      settings_(settings),
      gid_index_(gid_index),
      bounce_(bounce),
      registrations_(registrations),
      counters_(counters) {
  for (size_t i = 0; i < qps_.size(); ++i) qp_index_[qps_[i]->local().qpn] = i;
}

RdmaChannel::~RdmaChannel() {
  // QPs go first: after that no WR touches any buffer (verbs.h).
  Abort(Unavailable("connection closed"));
}

proto::RdmaOffer RdmaChannel::Offer() const {
  proto::RdmaOffer offer;
  offer.mtu = settings_.mtu;
  offer.gid = gid_;
  for (const auto& qp : qps_) offer.qps.push_back({qp->local().qpn, qp->local().psn});
  return offer;
}

Status RdmaChannel::Connect(const proto::RdmaAnswer& answer, const std::string& server) {
  if (answer.qps.size() != qps_.size()) {
    return ProtocolError("server " + server + " answered " + std::to_string(answer.qps.size()) +
                         " RDMA QPs for the " + std::to_string(qps_.size()) + " offered");
  }
  if (answer.mtu != settings_.mtu) {
    return FailedPrecondition("server " + server + " uses rdma.mtu " + std::to_string(answer.mtu) +
                              " but MEMKV_RDMA_MTU is " + std::to_string(settings_.mtu));
  }
  verbs::PathOptions path;
  path.mtu = settings_.mtu;
  path.gid_index = gid_index_;
  // The server's marking is the fabric's: the client stamps the same DSCP and
  // SL unless MEMKV_RDMA_TRAFFIC_CLASS / MEMKV_RDMA_SERVICE_LEVEL pin them.
  path.traffic_class = static_cast<uint8_t>(settings_.traffic_class.value_or(answer.traffic_class));
  path.service_level = static_cast<uint8_t>(settings_.service_level.value_or(answer.service_level));
  path.retry_count = settings_.retry_count;
  path.timeout = settings_.timeout;
  for (size_t i = 0; i < qps_.size(); ++i) {
    verbs::QpAddress remote;
    remote.qpn = answer.qps[i].qpn;
    remote.psn = answer.qps[i].psn;
    remote.gid = answer.gid;
    MEMKV_RETURN_IF_ERROR(qps_[i]->Connect(remote, path).WithContext("connecting RDMA QP to " + server));
  }
  rkey_ = answer.rkey;
  connected_ = true;
  counters_->SetRdmaPath(device_ + " gid_index " + std::to_string(gid_index_) + ", traffic_class " +
                         std::to_string(path.traffic_class) + " (DSCP " + std::to_string(path.traffic_class >> 2) +
                         "), service_level " + std::to_string(path.service_level) + ", mtu " +
                         std::to_string(path.mtu) + ", " + std::to_string(qps_.size()) + " QPs to " + server);
  return Status::Ok();
}

void RdmaChannel::Submit(RdmaSink* sink, std::vector<verbs::WorkRequest> wrs, const std::string& what) {
  if (wrs.empty()) {
    sink->OnRdmaDone(Status::Ok(), false);
    return;
  }
  const uint64_t id = next_op_++;
  Op& op = ops_[id];
  op.sink = sink;
  op.remaining = wrs.size();
  op.what = what;
  if (broken_) op.error = break_reason_;
  for (verbs::WorkRequest& wr : wrs) {
    wr.wr_id = id;
    if (broken_) {
      WrDone(id, break_reason_);
      if (ops_.find(id) == ops_.end()) return;
      continue;
    }
    PostOrQueue(id, wr);
  }
}

void RdmaChannel::PostOrQueue(uint64_t op, verbs::WorkRequest wr) {
  // Round robin over the QPs with room in their send queue.
  for (size_t tries = 0; tries < qps_.size(); ++tries) {
    const size_t q = next_qp_++ % qps_.size();
    if (posted_[q] >= kSendQueueDepth) continue;
    Status s = qps_[q]->Post(wr);
    if (!s.ok()) {
      Status failure = Unavailable("RDMA post failed: " + s.message());
      Break(failure);
      WrDone(op, failure);
      return;
    }
    ++posted_[q];
    return;
  }
  queue_.push_back({op, wr});
}

void RdmaChannel::PostQueued() {
  while (!queue_.empty() && !broken_) {
    bool room = false;
    for (uint32_t n : posted_) room |= n < kSendQueueDepth;
    if (!room) return;
    Queued q = queue_.front();
    queue_.pop_front();
    PostOrQueue(q.op, q.wr);
  }
}

void RdmaChannel::Break(const Status& why) {
  if (broken_) return;
  broken_ = true;
  break_reason_ = why;
  for (auto& qp : qps_) (void)qp->SetError();  // posted WRs flush
  // Queued WRs never reach a QP: they fail here.
  std::deque<Queued> queued;
  queued.swap(queue_);
  for (const Queued& q : queued) WrDone(q.op, why);
}

void RdmaChannel::WrDone(uint64_t id, const Status& error) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return;  // a late completion of an operation already told
  Op& op = it->second;
  if (!error.ok() && op.error.ok()) op.error = error;
  if (--op.remaining > 0) return;
  RdmaSink* sink = op.sink;
  Status status = op.error.ok() ? Status::Ok() : op.error.WithContext(op.what);
  ops_.erase(it);
  sink->OnRdmaDone(status, false);
}

bool RdmaChannel::Arm() {
  Status s = cq_->Arm();
  if (!s.ok()) {
    Break(Unavailable("arming the RDMA completion queue: " + s.message()));
    return true;
  }
  return Progress() > 0;
}

size_t RdmaChannel::Progress() {
  cq_->DrainEvents();
  verbs::Completion wc[kPollBatch];
  size_t total = 0;
  for (;;) {
    Result<size_t> n = cq_->Poll(std::span<verbs::Completion>(wc, kPollBatch));
    if (!n.ok()) {
      Abort(Unavailable("polling the RDMA completion queue: " + n.status().message()));
      return total + 1;
    }
    total += *n;
    for (size_t i = 0; i < *n; ++i) OnCompletion(wc[i]);
    if (*n < kPollBatch) break;
  }
  PostQueued();
  return total;
}

void RdmaChannel::OnCompletion(const verbs::Completion& wc) {
  auto q = qp_index_.find(wc.qp_num);
  if (q != qp_index_.end() && posted_[q->second] > 0) --posted_[q->second];
  Status error;
  if (wc.status != verbs::kWcSuccess) {
    counters_->CountCompletionError(wc.status);
    if (wc.status == verbs::kWcWrFlushErr && broken_) {
      error = break_reason_;  // flushed because an earlier WR failed: report that failure
    } else {
      error = Unavailable(verbs::WcStatusName(wc.status) +
                          (wc.status == verbs::kWcRetryExcErr
                               ? ": the path dropped the packets (a hop whose MTU is below the RDMA path "
                                 "MTU, a path that drops under load: no PFC for the traffic class, or the "
                                 "peer is gone)"
                               : ""));
      // The failed WR put its QP in error; every QP is retired with it.
      Break(error);
    }
  }
  WrDone(wc.wr_id, error);
}

void RdmaChannel::Abort(const Status& status) {
  if (qps_.empty() && ops_.empty()) return;
  qps_.clear();  // destroyed: nothing posted touches memory any more
  queue_.clear();
  broken_ = true;
  if (break_reason_.ok()) break_reason_ = status;
  std::unordered_map<uint64_t, Op> ops;
  ops.swap(ops_);
  for (auto& [id, op] : ops) op.sink->OnRdmaDone(status.WithContext(op.what), /*connection_lost=*/true);
}

std::optional<proto::RdmaGrant> RdmaChannel::TakeSpare(uint64_t size) {
  if (!spare_.has_value() || spare_->value_len != size) return std::nullopt;
  std::optional<proto::RdmaGrant> spare = std::move(spare_);
  spare_.reset();
  return spare;
}

bool RdmaChannel::WantsSpare(uint64_t size) const {
  return !spares_off_ && !spare_asked_ && size > 0 && size <= proto::kMaxRdmaSpareBytes &&
         !(spare_.has_value() && spare_->value_len == size);
}

uint64_t RdmaChannel::AskingSpare() {
  spare_asked_ = true;
  const uint64_t other = spare_.has_value() ? spare_->token : 0;
  spare_.reset();
  return other;
}

void RdmaChannel::OnSpareAnswer(std::optional<proto::RdmaGrant> spare, bool again) {
  spare_asked_ = false;
  spare_ = std::move(spare);
  if (!spare_.has_value() && !again) spares_off_ = true;
}

// ---- RdmaEngine ----

void RdmaEngine::MarkLacksSpares(std::string_view server) {
  MutexLock lock(lacking_mu_);
  lacks_spares_.emplace(server);
}

bool RdmaEngine::LacksSpares(std::string_view server) const {
  MutexLock lock(lacking_mu_);
  return lacks_spares_.find(server) != lacks_spares_.end();
}

RdmaEngine::~RdmaEngine() = default;

Result<std::unique_ptr<RdmaEngine>> RdmaEngine::Create(const RdmaSettings& settings, verbs::Provider& provider,
                                                       ClientCounters* counters) {
  if (settings.mode == config::TransportMode::kTcp) return std::unique_ptr<RdmaEngine>();
  std::unique_ptr<RdmaEngine> engine(new RdmaEngine(settings, counters));
  Status s = engine->Open(provider);
  if (s.ok()) {
    engine->active_.store(true, std::memory_order_release);
    return engine;
  }
  if (settings.mode == config::TransportMode::kRdma) {
    return FailedPrecondition(s.message() + "; MEMKV_TRANSPORT=rdma never falls back to TCP: fix RDMA, "
                              "or use auto or tcp");
  }
  // A host without any RDMA device is a normal state: one INFO line, not a WARN.
  engine->OnFailure(s.message(), /*normal_state=*/s.code() == StatusCode::kNotFound);
  return engine;
}

namespace {

// The source GID index: a pinned one (MEMKV_RDMA_GID_INDEX) must be in the
// port's table; auto picks a RoCE v2 GID, warning when there is none.
Result<uint32_t> GidIndexFor(const std::optional<uint32_t>& pinned, const verbs::PortInfo& port,
                             const std::string& name) {
  if (pinned.has_value()) {
    for (const verbs::GidEntry& g : port.gids) {
      if (g.index == *pinned) return *pinned;
    }
    return InvalidArgument("MEMKV_RDMA_GID_INDEX " + std::to_string(*pinned) + ": " + name + " port " +
                           std::to_string(port.port_num) + " has no GID at that index; allowed: auto or an index "
                           "the port's GID table holds");
  }
  std::optional<uint32_t> gid = verbs::PickRoceV2Gid(port);
  if (!gid.has_value()) {
    LOG_WARN_C("client") << "no RoCEv2 GID found on " << name << " port " << int{port.port_num} << " (netdev "
                         << port.netdev << "); using gid_index 0. Give " << port.netdev << " an IPv4 address";
  }
  return gid.value_or(0);
}

}  // namespace

Status RdmaEngine::Open(verbs::Provider& provider) {
  MEMKV_ASSIGN_OR_RETURN(std::vector<std::string> present, provider.Devices());
  if (present.empty()) return NotFound("no RDMA device on this host (" + provider.WhyNoDevices() + ")");
  std::vector<std::string> wanted = settings_.devices;
  if (wanted.empty()) wanted.push_back(present.front());
  for (const std::string& name : wanted) {
    MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<verbs::Context> context, provider.Open(name, 1));
    const verbs::PortInfo& port = context->port();
    MEMKV_RETURN_IF_ERROR(verbs::CheckMtu(settings_.mtu, port, "MEMKV_RDMA_MTU"));
    if (!port.active) {
      return Unavailable("RDMA device " + name + " port " + std::to_string(port.port_num) + " is " + port.state);
    }
    MEMKV_ASSIGN_OR_RETURN(uint32_t gid_index, GidIndexFor(settings_.gid_index, port, name));
    gid_index_.push_back(gid_index);
    bounce_.push_back(std::make_unique<BouncePool>(context.get()));
    registrations_.push_back(std::make_unique<RegistrationCache>(context.get(), kCachedRegistrationBytes));
    contexts_.push_back(std::move(context));
  }
  return Status::Ok();
}

bool RdmaEngine::OnFailure(const std::string& reason, bool normal_state) {
  if (settings_.mode != config::TransportMode::kAuto) return false;
  active_.store(false, std::memory_order_release);
  bool first = false;
  if (downgraded_.compare_exchange_strong(first, true)) {
    counters_->SetFallbackReason(reason);
    if (normal_state) {
      // Not a fallback: nothing failed, and an alert on fallbacks must not
      // fire on every host without a NIC.
      no_device_.store(true, std::memory_order_release);
      LOG_INFO_C("client") << reason << ": using inline-bulk TCP";
    } else {
      ClientCounters::Add(counters_->fallbacks, 1);
      LOG_WARN_C("client") << "RDMA failed (" << reason << "); downgrading engine to inline-bulk TCP for good";
    }
  }
  return true;
}

Result<std::unique_ptr<RdmaChannel>> RdmaEngine::NewChannel() {
  if (!active() || contexts_.empty()) return std::unique_ptr<RdmaChannel>();
  const size_t c = next_context_.fetch_add(1, std::memory_order_relaxed) % contexts_.size();
  verbs::Context& context = *contexts_[c];
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<verbs::CompletionQueue> cq,
                         context.CreateCq(kSendQueueDepth * settings_.qps));
  std::vector<std::unique_ptr<verbs::QueuePair>> qps;
  for (uint32_t i = 0; i < settings_.qps; ++i) {
    MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<verbs::QueuePair> qp, context.CreateQp(cq.get(), kSendQueueDepth));
    qps.push_back(std::move(qp));
  }
  verbs::Gid gid{};
  for (const verbs::GidEntry& g : context.port().gids) {
    if (g.index == gid_index_[c]) gid = g.gid;
  }
  auto channel = std::make_unique<RdmaChannel>(std::move(cq), std::move(qps), gid, settings_, gid_index_[c],
                                               bounce_[c].get(), registrations_[c].get(), counters_);
  channel->set_device(context.port().device);
  return channel;
}

Status RdmaEngine::Pin(void* p, uint64_t n) {
  for (auto& r : registrations_) MEMKV_RETURN_IF_ERROR(r->Pin(p, n));
  return Status::Ok();
}

Status RdmaEngine::Unpin(void* p) {
  for (auto& r : registrations_) MEMKV_RETURN_IF_ERROR(r->Unpin(p));
  return Status::Ok();
}

}  // namespace memkv::client
