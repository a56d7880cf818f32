// FakeFabric (fake.h): the verbs seam in process memory, with faults on demand.
//
// Everything lives in one State behind one mutex; the objects handed out
// (contexts, registrations, CQs, QPs) keep the State alive with a shared_ptr,
// so they may outlive the FakeFabric itself. A Post() runs the WR to
// completion on the spot: the checks a NIC makes, the copy, the completion.
//
// Where the fake picks one behaviour among those real NICs show, it picks the
// one that is harder on the caller, so code that passes here passes there:
//   - Protection domains: each Open() is its own PD. An lkey must belong to
//     the QP's Context and an rkey to the peer QP's Context, else
//     LOC_PROT_ERR / REM_ACCESS_ERR.
//   - Every error completion moves the requester QP to error (as a NIC does);
//     a bad rkey also moves the responder QP to error (IBV_EVENT_QP_ACCESS_ERR
//     on a NIC), so its own later WRs flush.
//   - A WR reaches its peer only if the peer QP still exists, is connected
//     back to this QP and is not in error; otherwise nothing answers and the
//     WR completes with IBV_WC_RETRY_EXC_ERR.
//   - Arm() raises an event only for completions that arrive after it
//     (ibv_req_notify_cq); completions already queued raise none.
//   - A QP's send queue holds max_send_wr WRs; a slot is freed when its
//     completion is polled (as in libmlx5). A full queue fails Post() with
//     ENOMEM.
//   - While held, every completion is held (flushes and errors too), so the
//     completions of one QP still arrive in the order its WRs were posted.
//   - Destroying a QP leaves its completions already on the CQ there, to be
//     polled with the qp_num of a QP that is gone (rxe does this; libmlx5
//     cleans them out). Its held completions are dropped: after the
//     destructor nothing more is reported for it.
//   - Destroying a CQ drops what it still holds.
#include "verbs/fake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <utility>

#include "base/errno_text.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/unique_fd.h"

namespace memkv::verbs {
namespace {

constexpr uint32_t kFirstQpn = 0x100;
constexpr uint32_t kFirstKey = 0x1000;
constexpr uint32_t kQpnMask = 0xffffff;  // QP numbers and PSNs are 24 bits

std::string Hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

// "Cannot allocate memory (ENOMEM)", as the real seam names errno.
Status ErrnoStatus(int err, const std::string& call) {
  std::string message = call + ": " + ErrnoText(err);
  switch (err) {
    case ENOMEM: return ResourceExhausted(std::move(message));
    case EINVAL: return InvalidArgument(std::move(message));
    default: return IoError(std::move(message));
  }
}

// Kept here rather than calling IsValidMtu so the fake stands on its own.
bool MtuIsValid(uint32_t bytes) {
  return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

// [addr, addr + length) inside [base, base + size), without pointer overflow.
bool RangeInside(uint64_t addr, uint64_t length, uint64_t base, uint64_t size) {
  return addr >= base && length <= size && addr - base <= size - length;
}

uint64_t AddrOf(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

struct FakeFabric::State {
  struct Mr {
    uint8_t* addr = nullptr;
    uint64_t length = 0;
    bool remote = false;
    uint64_t pd = 0;  // the Context (protection domain) it was registered in
  };

  struct Cq {
    UniqueFd event_fd;
    bool armed = false;
    bool destroyed = false;
    std::deque<Completion> queue;
  };

  struct Qp {
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint64_t pd = 0;
    Gid gid{};
    std::shared_ptr<Cq> cq;
    uint32_t max_send_wr = 0;
    uint32_t send_queue_used = 0;  // posted, completion not yet polled
    bool connected = false;
    bool error = false;
    QpAddress remote;
    PathOptions path;
  };

  struct Held {
    std::shared_ptr<Cq> cq;
    Completion completion;
  };

  mutable Mutex mu;
  std::vector<PortInfo> devices MEMKV_GUARDED_BY(mu);
  Status open_failure MEMKV_GUARDED_BY(mu);
  int fail_posts MEMKV_GUARDED_BY(mu) = 0;
  int fail_posts_errno MEMKV_GUARDED_BY(mu) = 0;
  int fail_completions MEMKV_GUARDED_BY(mu) = 0;
  int fail_completions_status MEMKV_GUARDED_BY(mu) = kWcSuccess;
  bool hold MEMKV_GUARDED_BY(mu) = false;
  uint32_t path_max_mtu MEMKV_GUARDED_BY(mu) = 0;
  std::vector<Held> held MEMKV_GUARDED_BY(mu);
  std::map<uint32_t, Mr> by_lkey MEMKV_GUARDED_BY(mu);
  std::map<uint32_t, Mr> by_rkey MEMKV_GUARDED_BY(mu);
  std::map<uint32_t, std::shared_ptr<Qp>> qps MEMKV_GUARDED_BY(mu);
  uint64_t next_pd MEMKV_GUARDED_BY(mu) = 1;
  uint32_t next_key MEMKV_GUARDED_BY(mu) = kFirstKey;
  uint32_t next_qpn MEMKV_GUARDED_BY(mu) = kFirstQpn;
  size_t outstanding MEMKV_GUARDED_BY(mu) = 0;
  uint64_t writes_completed MEMKV_GUARDED_BY(mu) = 0;
  uint64_t reads_completed MEMKV_GUARDED_BY(mu) = 0;
  uint64_t bytes_moved MEMKV_GUARDED_BY(mu) = 0;
  PathOptions last_path MEMKV_GUARDED_BY(mu);

  // A completion was polled or dropped: its WR no longer counts, and its
  // send-queue slot is free again.
  void Retire(uint32_t qpn) MEMKV_REQUIRES(mu) {
    --outstanding;
    auto it = qps.find(qpn);
    if (it != qps.end()) --it->second->send_queue_used;
  }

  void Deliver(const std::shared_ptr<Cq>& cq, const Completion& completion) MEMKV_REQUIRES(mu) {
    if (cq->destroyed) {
      Retire(completion.qp_num);
      return;
    }
    cq->queue.push_back(completion);
    if (!cq->armed) return;
    cq->armed = false;
    const uint64_t one = 1;
    if (::write(cq->event_fd.get(), &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) {
      LOG_WARN << "fake verbs: write(eventfd) of a CQ event: " << std::strerror(errno);
    }
  }

  void Complete(const std::shared_ptr<Cq>& cq, const Completion& completion) MEMKV_REQUIRES(mu) {
    if (hold) {
      held.push_back({cq, completion});
    } else {
      Deliver(cq, completion);
    }
  }

  // Drops the held completions `drop` selects, retiring their WRs.
  template <typename Pred>
  void DropHeld(Pred drop) MEMKV_REQUIRES(mu) {
    auto keep_end = std::stable_partition(held.begin(), held.end(), [&](const Held& h) { return !drop(h); });
    for (auto it = keep_end; it != held.end(); ++it) Retire(it->completion.qp_num);
    held.erase(keep_end, held.end());
  }

  const Mr* FindLocal(uint64_t pd, uint32_t lkey, const uint8_t* local, uint32_t length) const MEMKV_REQUIRES(mu) {
    auto it = by_lkey.find(lkey);
    if (it == by_lkey.end() || it->second.pd != pd) return nullptr;
    const Mr& mr = it->second;
    return RangeInside(AddrOf(local), length, AddrOf(mr.addr), mr.length) ? &mr : nullptr;
  }

  const Mr* FindRemote(uint64_t pd, uint32_t rkey, uint64_t remote_addr, uint32_t length) const MEMKV_REQUIRES(mu) {
    auto it = by_rkey.find(rkey);
    if (it == by_rkey.end() || it->second.pd != pd || !it->second.remote) return nullptr;
    const Mr& mr = it->second;
    return RangeInside(remote_addr, length, AddrOf(mr.addr), mr.length) ? &mr : nullptr;
  }

  // Runs one WR posted on `qp`; the completion status (and *byte_len).
  int Execute(Qp& qp, const WorkRequest& wr, uint32_t* byte_len) MEMKV_REQUIRES(mu) {
    if (fail_completions > 0) {
      --fail_completions;
      return fail_completions_status;
    }
    if (qp.error) return kWcWrFlushErr;
    auto peer_it = qps.find(qp.remote.qpn);
    if (peer_it == qps.end()) return kWcRetryExcErr;
    Qp& peer = *peer_it->second;
    if (!peer.connected || peer.error || peer.remote.qpn != qp.qpn) return kWcRetryExcErr;
    if (path_max_mtu > 0 && qp.path.mtu > path_max_mtu && wr.length > path_max_mtu) return kWcRetryExcErr;
    if (FindLocal(qp.pd, wr.lkey, wr.local, wr.length) == nullptr) return kWcLocProtErr;
    if (FindRemote(peer.pd, wr.rkey, wr.remote_addr, wr.length) == nullptr) {
      peer.error = true;
      return kWcRemAccessErr;
    }
    auto* remote = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(wr.remote_addr));
    if (wr.length > 0) {
      // memmove: a test may point both ends into one buffer.
      if (wr.opcode == WrOpcode::kWrite) {
        std::memmove(remote, wr.local, wr.length);
      } else {
        std::memmove(wr.local, remote, wr.length);
      }
    }
    (wr.opcode == WrOpcode::kWrite ? writes_completed : reads_completed) += 1;
    bytes_moved += wr.length;
    *byte_len = wr.length;
    return kWcSuccess;
  }
};

namespace {

using State = FakeFabric::State;

class FakeRegistration final : public Registration {
 public:
  FakeRegistration(std::shared_ptr<State> state, uint8_t* addr, uint64_t length, uint32_t lkey, uint32_t rkey)
      : state_(std::move(state)), addr_(addr), length_(length), lkey_(lkey), rkey_(rkey) {}
  ~FakeRegistration() override {
    MutexLock lock(state_->mu);
    state_->by_lkey.erase(lkey_);
    state_->by_rkey.erase(rkey_);
  }
  FakeRegistration(const FakeRegistration&) = delete;
  FakeRegistration& operator=(const FakeRegistration&) = delete;

  uint8_t* addr() const override { return addr_; }
  uint64_t length() const override { return length_; }
  uint32_t lkey() const override { return lkey_; }
  uint32_t rkey() const override { return rkey_; }

 private:
  std::shared_ptr<State> state_;
  uint8_t* addr_;
  uint64_t length_;
  uint32_t lkey_;
  uint32_t rkey_;
};

class FakeCompletionQueue final : public CompletionQueue {
 public:
  FakeCompletionQueue(std::shared_ptr<State> state, std::shared_ptr<State::Cq> cq)
      : state_(std::move(state)), cq_(std::move(cq)), fd_(cq_->event_fd.get()) {}
  ~FakeCompletionQueue() override {
    MutexLock lock(state_->mu);
    cq_->destroyed = true;
    for (const Completion& c : cq_->queue) state_->Retire(c.qp_num);
    cq_->queue.clear();
    state_->DropHeld([&](const State::Held& h) { return h.cq == cq_; });
    cq_->event_fd.Reset();
  }
  FakeCompletionQueue(const FakeCompletionQueue&) = delete;
  FakeCompletionQueue& operator=(const FakeCompletionQueue&) = delete;

  int fd() const override { return fd_; }

  Status Arm() override {
    MutexLock lock(state_->mu);
    cq_->armed = true;
    return Status::Ok();
  }

  void DrainEvents() override {
    uint64_t count = 0;
    // The eventfd is non-blocking; EAGAIN means there was nothing to drain.
    if (::read(fd_, &count, sizeof(count)) < 0 && errno != EAGAIN) {
      LOG_WARN << "fake verbs: read(eventfd) of CQ events: " << std::strerror(errno);
    }
  }

  Result<size_t> Poll(std::span<Completion> out) override {
    MutexLock lock(state_->mu);
    size_t n = 0;
    while (n < out.size() && !cq_->queue.empty()) {
      out[n] = cq_->queue.front();
      cq_->queue.pop_front();
      state_->Retire(out[n].qp_num);
      ++n;
    }
    return n;
  }

  const std::shared_ptr<State::Cq>& cq() const { return cq_; }
  const State* state() const { return state_.get(); }

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<State::Cq> cq_;
  int fd_;  // stays valid for this object's life; cq_->event_fd owns it
};

class FakeQueuePair final : public QueuePair {
 public:
  FakeQueuePair(std::shared_ptr<State> state, std::shared_ptr<State::Qp> qp, PortInfo port)
      : state_(std::move(state)), qp_(std::move(qp)), port_(std::move(port)) {}
  ~FakeQueuePair() override {
    MutexLock lock(state_->mu);
    const uint32_t qpn = qp_->qpn;
    state_->DropHeld([qpn](const State::Held& h) { return h.completion.qp_num == qpn; });
    state_->qps.erase(qpn);
  }
  FakeQueuePair(const FakeQueuePair&) = delete;
  FakeQueuePair& operator=(const FakeQueuePair&) = delete;

  QpAddress local() const override { return {qp_->qpn, qp_->psn, qp_->gid}; }

  Status Connect(const QpAddress& remote, const PathOptions& path) override {
    MutexLock lock(state_->mu);
    state_->last_path = path;
    const std::string call = "ibv_modify_qp(RTR) on " + port_.device + " qpn " + Hex(qp_->qpn);
    if (qp_->connected || qp_->error) {
      return ErrnoStatus(EINVAL, call + " (the QP is not in RESET: already connected or in error)");
    }
    if (!MtuIsValid(path.mtu)) return ErrnoStatus(EINVAL, call + " (path mtu " + std::to_string(path.mtu) + ")");
    if (path.mtu > port_.active_mtu) {
      return ErrnoStatus(EINVAL, call + " (path mtu " + std::to_string(path.mtu) + " above the port's active mtu " +
                                     std::to_string(port_.active_mtu) + ")");
    }
    if (port_.ethernet && !port_.gids.empty() &&
        std::none_of(port_.gids.begin(), port_.gids.end(),
                     [&](const GidEntry& e) { return e.index == path.gid_index; })) {
      return ErrnoStatus(EINVAL, call + " (no GID at index " + std::to_string(path.gid_index) + ")");
    }
    if (path.retry_count > 7 || path.timeout > 31) {
      return ErrnoStatus(EINVAL, call + " (retry_count " + std::to_string(path.retry_count) + ", timeout " +
                                     std::to_string(path.timeout) + ")");
    }
    if (port_.max_qp_init_rd_atom > 0 && path.max_rd_atomic > port_.max_qp_init_rd_atom) {
      return ErrnoStatus(EINVAL, call + " (max_rd_atomic " + std::to_string(path.max_rd_atomic) + " above " +
                                     std::to_string(port_.max_qp_init_rd_atom) + ")");
    }
    if (state_->qps.find(remote.qpn) == state_->qps.end()) {
      return ErrnoStatus(EINVAL, call + " (remote qpn " + Hex(remote.qpn) + " does not exist on the fabric)");
    }
    qp_->remote = remote;
    qp_->path = path;
    qp_->connected = true;
    return Status::Ok();
  }

  Status Post(const WorkRequest& wr) override {
    State& s = *state_;
    MutexLock lock(s.mu);
    const std::string call = "ibv_post_send on " + port_.device + " qpn " + Hex(qp_->qpn);
    if (s.fail_posts > 0) {
      --s.fail_posts;
      return ErrnoStatus(s.fail_posts_errno, call);
    }
    if (!qp_->connected && !qp_->error) return ErrnoStatus(EINVAL, call + " (QP not connected)");
    if (qp_->send_queue_used >= qp_->max_send_wr) {
      return ErrnoStatus(ENOMEM, call + " (send queue full: " + std::to_string(qp_->send_queue_used) + " WRs)");
    }
    ++qp_->send_queue_used;
    ++s.outstanding;
    Completion completion;
    completion.wr_id = wr.wr_id;
    completion.opcode = wr.opcode;
    completion.qp_num = qp_->qpn;
    completion.status = s.Execute(*qp_, wr, &completion.byte_len);
    if (completion.status != kWcSuccess) qp_->error = true;
    s.Complete(qp_->cq, completion);
    return Status::Ok();
  }

  Status SetError() override {
    MutexLock lock(state_->mu);
    qp_->error = true;
    return Status::Ok();
  }

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<State::Qp> qp_;
  const PortInfo port_;  // copied: the QP never reaches into its Context
};

class FakeContext final : public Context {
 public:
  FakeContext(std::shared_ptr<State> state, PortInfo port, uint64_t pd)
      : state_(std::move(state)), port_(std::move(port)), pd_(pd) {}
  FakeContext(const FakeContext&) = delete;
  FakeContext& operator=(const FakeContext&) = delete;

  const PortInfo& port() const override { return port_; }

  Result<std::unique_ptr<Registration>> Register(void* addr, uint64_t length, bool remote) override {
    if (addr == nullptr || length == 0 || (port_.max_mr_size > 0 && length > port_.max_mr_size)) {
      return ErrnoStatus(EINVAL, "ibv_reg_mr on " + port_.device + " (" + Hex(AddrOf(addr)) + ", " +
                                     std::to_string(length) + " bytes)");
    }
    MutexLock lock(state_->mu);
    const uint32_t lkey = state_->next_key++;
    const uint32_t rkey = state_->next_key++;
    State::Mr mr{static_cast<uint8_t*>(addr), length, remote, pd_};
    state_->by_lkey[lkey] = mr;
    state_->by_rkey[rkey] = mr;
    return std::unique_ptr<Registration>(
        std::make_unique<FakeRegistration>(state_, static_cast<uint8_t*>(addr), length, lkey, rkey));
  }

  Result<std::unique_ptr<CompletionQueue>> CreateCq(uint32_t depth) override {
    if (depth == 0) return ErrnoStatus(EINVAL, "ibv_create_cq on " + port_.device + " (depth 0)");
    auto cq = std::make_shared<State::Cq>();
    cq->event_fd.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!cq->event_fd.valid()) return ErrnoStatus(errno, "eventfd for a fake CQ on " + port_.device);
    return std::unique_ptr<CompletionQueue>(std::make_unique<FakeCompletionQueue>(state_, std::move(cq)));
  }

  Result<std::unique_ptr<QueuePair>> CreateQp(CompletionQueue* cq, uint32_t max_send_wr) override {
    const std::string call = "ibv_create_qp on " + port_.device;
    auto* fake_cq = dynamic_cast<FakeCompletionQueue*>(cq);
    if (fake_cq == nullptr || fake_cq->state() != state_.get()) {
      return InvalidArgument(call + ": the CQ is not one of this fake fabric's");
    }
    if (max_send_wr == 0) return ErrnoStatus(EINVAL, call + " (max_send_wr 0)");
    auto qp = std::make_shared<State::Qp>();
    qp->pd = pd_;
    qp->cq = fake_cq->cq();
    qp->max_send_wr = max_send_wr;
    for (const GidEntry& e : port_.gids) {
      if (e.type == GidType::kRoceV2) {
        qp->gid = e.gid;
        break;
      }
    }
    MutexLock lock(state_->mu);
    qp->qpn = state_->next_qpn++ & kQpnMask;
    qp->psn = (qp->qpn * 2654435761u) & kQpnMask;  // fixed, but not equal across QPs
    state_->qps[qp->qpn] = qp;
    return std::unique_ptr<QueuePair>(std::make_unique<FakeQueuePair>(state_, std::move(qp), port_));
  }

 private:
  std::shared_ptr<State> state_;
  const PortInfo port_;
  const uint64_t pd_;
};

}  // namespace

FakeFabric::FakeFabric() : state_(std::make_shared<State>()) {}
FakeFabric::~FakeFabric() = default;

void FakeFabric::AddDevice(const PortInfo& port) {
  MutexLock lock(state_->mu);
  for (PortInfo& existing : state_->devices) {
    if (existing.device == port.device) {
      existing = port;  // later Open()s see the new port; open Contexts keep theirs
      return;
    }
  }
  state_->devices.push_back(port);
}

void FakeFabric::AddDevice(const std::string& name) { AddDevice(HealthyPort(name)); }

PortInfo FakeFabric::HealthyPort(const std::string& name) {
  // A stable address per name (10.0.x.y), so two devices rarely share one.
  uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
  Gid gid{};
  gid[10] = 0xff;
  gid[11] = 0xff;
  gid[12] = 10;
  gid[13] = 0;
  gid[14] = static_cast<uint8_t>(hash >> 8);
  gid[15] = static_cast<uint8_t>(1 + (hash % 254));

  PortInfo port;
  port.device = name;
  port.port_num = 1;
  port.active = true;
  port.state = "ACTIVE";
  port.active_mtu = 4096;
  port.max_mtu = 4096;
  port.ethernet = true;
  port.netdev = "eth_" + name;
  port.gids = {GidEntry{0, gid, GidType::kRoceV1, port.netdev}, GidEntry{1, gid, GidType::kRoceV2, port.netdev}};
  port.max_mr_size = ~uint64_t{0};
  port.max_qp_rd_atom = 16;
  port.max_qp_init_rd_atom = 16;
  return port;
}

Result<std::vector<std::string>> FakeFabric::Devices() {
  MutexLock lock(state_->mu);
  std::vector<std::string> names;
  for (const PortInfo& p : state_->devices) names.push_back(p.device);
  return names;
}

Result<std::unique_ptr<Context>> FakeFabric::Open(const std::string& device, uint8_t port) {
  MutexLock lock(state_->mu);
  if (!state_->open_failure.ok()) return state_->open_failure;
  std::string present;
  for (const PortInfo& p : state_->devices) {
    if (p.device == device) {
      if (p.port_num != port) {
        return ErrnoStatus(EINVAL, "ibv_query_port(" + device + ", port " + std::to_string(port) + ")");
      }
      return std::unique_ptr<Context>(std::make_unique<FakeContext>(state_, p, state_->next_pd++));
    }
    present += present.empty() ? p.device : ", " + p.device;
  }
  return NotFound("RDMA device " + device + " not found; devices present: " + (present.empty() ? "none" : present));
}

void FakeFabric::FailOpen(Status status) {
  MutexLock lock(state_->mu);
  state_->open_failure = std::move(status);
}

void FakeFabric::FailPosts(int n, int err) {
  MutexLock lock(state_->mu);
  state_->fail_posts = n;
  state_->fail_posts_errno = err;
}

void FakeFabric::FailCompletions(int n, int status) {
  MutexLock lock(state_->mu);
  state_->fail_completions = n;
  state_->fail_completions_status = status;
}

void FakeFabric::HoldCompletions(bool hold) {
  MutexLock lock(state_->mu);
  state_->hold = hold;
  if (hold) return;
  std::vector<State::Held> held = std::exchange(state_->held, {});
  for (const State::Held& h : held) state_->Deliver(h.cq, h.completion);
}

void FakeFabric::SetPathMaxMtu(uint32_t bytes) {
  MutexLock lock(state_->mu);
  state_->path_max_mtu = bytes;
}

size_t FakeFabric::LiveRegistrations() const {
  MutexLock lock(state_->mu);
  return state_->by_lkey.size();
}

size_t FakeFabric::LiveQps() const {
  MutexLock lock(state_->mu);
  return state_->qps.size();
}

size_t FakeFabric::OutstandingWrs() const {
  MutexLock lock(state_->mu);
  return state_->outstanding;
}

uint64_t FakeFabric::WritesCompleted() const {
  MutexLock lock(state_->mu);
  return state_->writes_completed;
}

uint64_t FakeFabric::ReadsCompleted() const {
  MutexLock lock(state_->mu);
  return state_->reads_completed;
}

uint64_t FakeFabric::BytesMoved() const {
  MutexLock lock(state_->mu);
  return state_->bytes_moved;
}

PathOptions FakeFabric::LastPath() const {
  MutexLock lock(state_->mu);
  return state_->last_path;
}

}  // namespace memkv::verbs
