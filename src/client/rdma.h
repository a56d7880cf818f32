// The client's side of the RDMA transport (docs/rdma.md).
//
// RdmaEngine (one per Client): the opened device(s), the registered bounce
// pool, and the transport policy of MEMKV_TRANSPORT:
//   auto  RDMA while it works; the first RDMA failure (no device, MTU above
//         the port's, the server refusing, a completion error in flight)
//         downgrades the engine to inline-bulk TCP for good, with one WARN
//   rdma  never falls back; the failure reaches the caller, naming the verbs
//         status
//   tcp   no engine at all: no verbs device is ever opened
//
// RdmaChannel (one per TCP connection): a CQ and several RC QPs connected to
// the server's responder QPs at Connect. Operations hand it their work
// requests; it spreads them over the QPs (queueing what does not fit a send
// queue), polls completions on the calling thread (no lock per operation),
// and tells each operation once when all its WRs are done. The first
// completion error moves every QP to error, so everything outstanding
// flushes and every operation hears of the failure; Abort() destroys the QPs
// so that no WR touches memory after it returns.
#ifndef MEMKV_CLIENT_RDMA_H_
#define MEMKV_CLIENT_RDMA_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "client/counters.h"
#include "config/client_config.h"
#include "memkv/status.h"
#include "proto/messages.h"
#include "verbs/verbs.h"

namespace memkv::client {

struct RdmaSettings {
  config::TransportMode mode = config::TransportMode::kAuto;
  std::vector<std::string> devices;  // empty: the first device present
  uint32_t mtu = 4096;
  uint8_t retry_count = 6;
  uint8_t timeout = 14;
  uint32_t qps = 2;
  // Pinned path attributes; nullopt: the detected GID, the server's marking.
  std::optional<uint32_t> gid_index;
  std::optional<uint32_t> traffic_class;
  std::optional<uint32_t> service_level;
};

// A registered buffer from the bounce pool.
struct BounceBuffer {
  uint8_t* data = nullptr;
  uint64_t capacity = 0;
  uint32_t lkey = 0;
  int size_class = -1;
};

// Registered buffers for callers whose memory is not registered: power-of-two
// size classes, each buffer registered once when first made and reused.
// No buffer is larger than kMaxBufferBytes: a larger value moves through one
// such buffer a piece at a time (RdmaExchange), never through a whole-value
// copy.
class BouncePool {
 public:
  static constexpr uint64_t kMaxBufferBytes = 16 << 20;

  // InvalidArgument when `size` exceeds kMaxBufferBytes.
  explicit BouncePool(verbs::Context* context) : context_(context) {}
  ~BouncePool();
  Result<BounceBuffer> Acquire(uint64_t size);
  void Release(BounceBuffer buffer);
  size_t buffers_in_use() const;

 private:
  struct Slab {
    std::unique_ptr<uint8_t, void (*)(void*)> memory{nullptr, nullptr};
    std::unique_ptr<verbs::Registration> registration;
  };
  verbs::Context* context_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Slab>> slabs_ MEMKV_GUARDED_BY(mu_);
  std::map<int, std::vector<BounceBuffer>> free_ MEMKV_GUARDED_BY(mu_);  // by size class
  size_t in_use_ MEMKV_GUARDED_BY(mu_) = 0;
};

// Caller memory registered on first use and cached, so a large value moves
// between the caller's buffer and the NIC with no copy. Registrations cover
// whole pages and are reused by every later transfer inside them; the least
// recently used unused ones are dropped beyond `max_bytes`. Regions the
// caller registers explicitly (Client::RegisterMemory) are never dropped.
// Lookups scan the entries: a client keeps few, large registrations.
//
// Memory freed and mapped again at the same address would leave a cached
// registration pointing at the old pages. The checksums catch it (the server
// checks what a WRITE landed, the client what a READ brought); the operation
// then calls Invalidate() and repeats through the bounce pool.
class RegistrationCache {
 public:
  // Smaller values are copied through the bounce pool, unless a registration
  // (a region the caller pinned, or a cached one) already covers them.
  static constexpr uint64_t kMinBytes = 256 << 10;

  RegistrationCache(verbs::Context* context, uint64_t max_bytes) : context_(context), max_bytes_(max_bytes) {}
  ~RegistrationCache();

  struct Lease {
    uint32_t lkey = 0;
    uint64_t id = 0;  // 0: no lease
  };
  // A registration covering [p, p + n): an existing one of any size, else one
  // made now; nullopt when none covers it and n < kMinBytes, or registering
  // fails (the caller uses the bounce pool).
  std::optional<Lease> Acquire(const void* p, uint64_t n);
  void Release(const Lease& lease);
  // The registration no longer maps the caller's bytes: drop it once unused.
  void Invalidate(const Lease& lease);
  // Explicit registration of a caller region, kept until Unpin.
  Status Pin(void* p, uint64_t n);
  Status Unpin(void* p);

  uint64_t registered_bytes() const;
  size_t leases() const;

 private:
  struct Entry {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    std::unique_ptr<verbs::Registration> registration;
    uint64_t id = 0;
    int users = 0;
    bool pinned = false;
    bool invalid = false;
    uint64_t last_use = 0;
  };
  Result<Entry*> Register(uintptr_t begin, uintptr_t end, bool pinned) MEMKV_REQUIRES(mu_);
  void Trim() MEMKV_REQUIRES(mu_);
  Entry* Find(uint64_t id) MEMKV_REQUIRES(mu_);
  void Drop(Entry* e) MEMKV_REQUIRES(mu_);

  verbs::Context* context_;
  const uint64_t max_bytes_;
  mutable Mutex mu_;
  std::map<uint64_t, std::unique_ptr<Entry>> entries_ MEMKV_GUARDED_BY(mu_);  // by id; ranges may overlap
  std::atomic<size_t> entry_count_{0};  // entries_.size(), read without mu_
  uint64_t bytes_ MEMKV_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ MEMKV_GUARDED_BY(mu_) = 1;
  uint64_t tick_ MEMKV_GUARDED_BY(mu_) = 0;
};

// Told once when every WR of one submitted operation is done.
class RdmaSink {
 public:
  virtual ~RdmaSink() = default;
  // `status` Ok, or the first failure among the WRs (naming the verbs
  // status); `connection_lost`: the connection itself is failing (deadline,
  // server gone), so nothing more can be sent on it.
  virtual void OnRdmaDone(const Status& status, bool connection_lost) = 0;
};

class RdmaChannel {
 public:
  RdmaChannel(std::unique_ptr<verbs::CompletionQueue> cq, std::vector<std::unique_ptr<verbs::QueuePair>> qps,
              const verbs::Gid& gid, const RdmaSettings& settings, uint32_t gid_index, BouncePool* bounce,
              RegistrationCache* registrations, ClientCounters* counters);
  ~RdmaChannel();

  proto::RdmaOffer Offer() const;
  // Connects every QP to the server's, with the server's marking.
  Status Connect(const proto::RdmaAnswer& answer, const std::string& server);
  uint32_t rkey() const { return rkey_; }
  // The local device, for messages and ClientStats::rdma_path.
  void set_device(std::string device) { device_ = std::move(device); }
  // Registered staging memory on this channel's device, and the cache of
  // caller registrations on it.
  BouncePool& bounce() { return *bounce_; }
  RegistrationCache& registrations() { return *registrations_; }
  bool ready() const { return connected_ && !broken_; }
  bool broken() const { return broken_; }

  // Posts `wrs` for `sink` (which must stay alive until told). No WRs: the
  // sink is told at once.
  void Submit(RdmaSink* sink, std::vector<verbs::WorkRequest> wrs, const std::string& what);
  // Operations with WRs not yet completed (posted or queued).
  size_t outstanding() const { return ops_.size(); }

  int fd() const { return cq_->fd(); }
  // Arms the CQ, then polls once more (completions that arrived before the
  // arm raise no event): true when that found any, so the caller must not
  // block.
  bool Arm();
  // Polls completions and tells the sinks whose operations finished; how
  // many completions there were.
  size_t Progress();
  // The connection is failing: destroys the QPs (no WR touches memory after
  // this returns) and tells every outstanding sink `status`.
  void Abort(const Status& status);

  // Spare slots (docs/rdma.md, "Data path"): the server holds a landing
  // slot for this connection's next put of its size, which WRITEs into it
  // at once and commits it in one round trip (RdmaCommitTo). The channel
  // keeps one.
  // The spare when it is `size` bytes (it is then the caller's), else none.
  std::optional<proto::RdmaGrant> TakeSpare(uint64_t size);
  // A put of `size` bytes should ask for a spare for the next one: spares
  // are in use on this connection, none of that size is held, none is asked.
  bool WantsSpare(uint64_t size) const;
  // An RdmaSpare goes out: returns the token of a spare of another size,
  // which the caller releases first (0: none).
  uint64_t AskingSpare();
  // Its answer: the spare, or none (`again`: asking later may succeed).
  void OnSpareAnswer(std::optional<proto::RdmaGrant> spare, bool again);

 private:
  struct Op {
    RdmaSink* sink = nullptr;
    size_t remaining = 0;
    Status error;
    std::string what;
  };
  struct Queued {
    uint64_t op;
    verbs::WorkRequest wr;
  };

  void PostOrQueue(uint64_t op, verbs::WorkRequest wr);
  void PostQueued();
  void Break(const Status& why);  // every QP to error: the rest flushes
  void OnCompletion(const verbs::Completion& wc);
  void WrDone(uint64_t op, const Status& error);

  std::unique_ptr<verbs::CompletionQueue> cq_;
  std::vector<std::unique_ptr<verbs::QueuePair>> qps_;
  std::vector<uint32_t> posted_;  // per QP: WRs in its send queue
  verbs::Gid gid_;
  RdmaSettings settings_;
  uint32_t gid_index_;
  BouncePool* bounce_;
  RegistrationCache* registrations_;
  ClientCounters* counters_;
  std::string device_;
  bool connected_ = false;
  bool broken_ = false;
  Status break_reason_;
  uint32_t rkey_ = 0;
  std::unordered_map<uint32_t, size_t> qp_index_;  // qpn -> index
  size_t next_qp_ = 0;
  uint64_t next_op_ = 1;
  std::unordered_map<uint64_t, Op> ops_;
  std::deque<Queued> queue_;
  std::optional<proto::RdmaGrant> spare_;
  bool spare_asked_ = false;
  bool spares_off_ = false;  // the server refused one for good
};

class RdmaEngine {
 public:
  // Null for MEMKV_TRANSPORT=tcp. In auto, a device that cannot be used
  // gives an engine that is already downgraded (one WARN); in rdma, an error.
  static Result<std::unique_ptr<RdmaEngine>> Create(const RdmaSettings& settings, verbs::Provider& provider,
                                                    ClientCounters* counters);
  ~RdmaEngine();

  // New operations use RDMA.
  bool active() const { return active_.load(std::memory_order_acquire); }
  // auto on a host without any RDMA device: TCP from the start, a normal
  // state rather than a fallback (not counted in ClientStats::fallbacks).
  bool no_device() const { return no_device_.load(std::memory_order_acquire); }
  config::TransportMode mode() const { return settings_.mode; }
  // An RDMA failure. auto: downgrade for good (WARN once, counted) and true
  // ("re-issue over TCP"); rdma: false (the caller reports the error).
  // `normal_state` (no device at all): the line is INFO, not WARN, and it
  // is not counted as a fallback (no_device()).
  bool OnFailure(const std::string& reason, bool normal_state = false);

  // A channel for a new connection (null once downgraded). Its QPs are
  // connected when the server's answer arrives.
  Result<std::unique_ptr<RdmaChannel>> NewChannel();
  // Servers that answered RdmaSpare "unknown opcode" (they predate spare
  // slots): their connections put without spares from then on.
  void MarkLacksSpares(std::string_view server);
  bool LacksSpares(std::string_view server) const;
  // Client::RegisterMemory / UnregisterMemory: on every device in use.
  Status Pin(void* p, uint64_t n);
  Status Unpin(void* p);

 private:
  RdmaEngine(const RdmaSettings& settings, ClientCounters* counters) : settings_(settings), counters_(counters) {}
  Status Open(verbs::Provider& provider);

  RdmaSettings settings_;
  ClientCounters* counters_;
  std::atomic<bool> active_{false};
  std::atomic<bool> downgraded_{false};  // the WARN went out
  std::atomic<bool> no_device_{false};
  std::vector<std::unique_ptr<verbs::Context>> contexts_;  // one per device used
  std::vector<uint32_t> gid_index_;                        // per context
  std::vector<std::unique_ptr<BouncePool>> bounce_;        // per context
  std::vector<std::unique_ptr<RegistrationCache>> registrations_;  // per context
  std::atomic<size_t> next_context_{0};
  mutable Mutex lacking_mu_;
  std::set<std::string, std::less<>> lacks_spares_ MEMKV_GUARDED_BY(lacking_mu_);
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_RDMA_H_
