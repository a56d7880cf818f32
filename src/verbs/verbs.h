// The verbs seam: everything MemKV does with an RDMA NIC goes through these
// interfaces, and nothing above them includes <infiniband/verbs.h>.
//
// Two implementations:
//   SystemProvider()      rdma-core's libibverbs (ibverbs.cc): real NICs, rxe
//   FakeFabric (fake.h)   in-process, for unit tests: one-sided WRITE/READ are
//                         memcpy between registrations, and completion errors,
//                         failed posts, QPs in error and late completions can be
//                         injected on demand
// A further transport (DC on mlx5) is another implementation of Context and
// QueuePair.
//
// Object lifetimes: a Context outlives every Registration, CompletionQueue and
// QueuePair made from it; a CompletionQueue outlives the QueuePairs that use
// it. Destroying a QueuePair stops the NIC from touching memory on its behalf
// (after the destructor returns no posted WR reads or writes any buffer), so a
// caller may reuse the buffers of WRs that never completed once the QP is gone.
//
// Threads: a Context may be shared (Register and Create* are thread-safe); a
// QueuePair and a CompletionQueue are used by one thread at a time.
#ifndef MEMKV_VERBS_VERBS_H_
#define MEMKV_VERBS_VERBS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memkv/status.h"

namespace memkv::verbs {

// Work completion status values, numbered as enum ibv_wc_status.
inline constexpr int kWcSuccess = 0;
inline constexpr int kWcLocLenErr = 1;
inline constexpr int kWcLocQpOpErr = 2;
inline constexpr int kWcLocProtErr = 4;
inline constexpr int kWcWrFlushErr = 5;
inline constexpr int kWcRemInvReqErr = 9;
inline constexpr int kWcRemAccessErr = 10;
inline constexpr int kWcRemOpErr = 11;
inline constexpr int kWcRetryExcErr = 12;
inline constexpr int kWcRnrRetryExcErr = 13;
inline constexpr int kWcGeneralErr = 21;
// "IBV_WC_RETRY_EXC_ERR (status 12)"; unknown values as "IBV_WC status N".
std::string WcStatusName(int status);

// Path MTU values in bytes (IB enum ibv_mtu 1..5 = 256..4096).
bool IsValidMtu(uint32_t bytes);

enum class GidType { kIb, kRoceV1, kRoceV2 };
const char* GidTypeName(GidType type);  // "IB", "RoCE v1", "RoCE v2"

using Gid = std::array<uint8_t, 16>;
// "fe80:0000:...:" style as /sys shows it, and ::ffff:a.b.c.d detection.
std::string GidToString(const Gid& gid);
bool GidIsIpv4Mapped(const Gid& gid);
std::string GidIpv4(const Gid& gid);  // "10.0.0.1" or "" when not IPv4-mapped

struct GidEntry {
  uint32_t index = 0;
  Gid gid{};
  GidType type = GidType::kRoceV1;
  std::string netdev;  // the netdev the entry belongs to (may be empty)
};

// One port of one device, as ibv_query_port / ibv_query_gid_ex see it.
struct PortInfo {
  std::string device;        // "mlx5_0", "rxe0"
  uint8_t port_num = 1;
  bool active = false;       // IBV_PORT_ACTIVE
  std::string state;         // "ACTIVE", "DOWN", "INIT", ...
  uint32_t active_mtu = 0;   // bytes (256..4096)
  uint32_t max_mtu = 0;      // bytes
  bool ethernet = true;      // link layer Ethernet (RoCE) rather than InfiniBand
  std::string netdev;        // backing netdev, e.g. "enp1s0f0", "eth0" (may be empty)
  std::vector<GidEntry> gids;  // valid (non-zero) entries only, by index
  uint64_t max_mr_size = 0;
  uint32_t max_qp_rd_atom = 0;  // READs a QP may have outstanding as responder
  uint32_t max_qp_init_rd_atom = 0;  // ... and as requester
};

// Memory registered with the device. Destroying it deregisters.
class Registration {
 public:
  virtual ~Registration() = default;
  virtual uint8_t* addr() const = 0;
  virtual uint64_t length() const = 0;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
};

// What the other side of an RC connection needs to know of a local QP.
struct QpAddress {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // 24 bits
  Gid gid{};
};

// Attributes applied when a QP is connected (RTR / RTS).
struct PathOptions {
  uint32_t mtu = 4096;          // path MTU in bytes
  uint32_t gid_index = 0;       // local source GID index
  uint8_t traffic_class = 0;    // GRH traffic class = DSCP << 2
  uint8_t service_level = 0;    // SL = priority
  uint8_t retry_count = 6;      // 0..7; rxe treats 7 as "retry forever"
  uint8_t timeout = 14;         // local ACK timeout exponent: 4.096 us * 2^timeout
  uint8_t max_rd_atomic = 16;   // outstanding READs as requester / responder
};

enum class WrOpcode : uint8_t { kWrite, kRead };

// One signaled one-sided work request on a single local buffer.
struct WorkRequest {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kWrite;
  uint8_t* local = nullptr;  // inside a Registration whose lkey is `lkey`
  uint32_t length = 0;
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
};

struct Completion {
  uint64_t wr_id = 0;
  int status = kWcSuccess;
  WrOpcode opcode = WrOpcode::kWrite;  // meaningful only on success
  uint32_t byte_len = 0;
  uint32_t vendor_err = 0;
  uint32_t qp_num = 0;
};

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  // A descriptor that polls readable after Arm() once a completion arrives
  // (the completion channel). Never -1.
  virtual int fd() const = 0;
  // Asks for one event on fd() at the next completion (ibv_req_notify_cq).
  // Poll again after arming: completions that arrived before it raise no event.
  virtual Status Arm() = 0;
  // Consumes the events pending on fd() (ibv_get_cq_event + ack); never blocks.
  virtual void DrainEvents() = 0;
  // Moves up to out.size() completions into `out`; how many.
  virtual Result<size_t> Poll(std::span<Completion> out) = 0;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  // qpn and psn of this QP. gid is left zero: the caller fills it from
  // PortInfo.gids at the source gid_index it connects with.
  virtual QpAddress local() const = 0;
  // RESET/INIT -> RTR -> RTS against `remote`, with `path` applied (GRH with
  // traffic class and source GID index, SL, path MTU, retry count, timeout).
  virtual Status Connect(const QpAddress& remote, const PathOptions& path) = 0;
  // Posts one signaled WR. A failure names errno; nothing was posted then.
  virtual Status Post(const WorkRequest& wr) = 0;
  // Moves the QP to the error state: WRs still outstanding complete with
  // IBV_WC_WR_FLUSH_ERR.
  virtual Status SetError() = 0;
};

class Context {
 public:
  virtual ~Context() = default;
  virtual const PortInfo& port() const = 0;
  // `remote`: the peer may READ and WRITE it (the server's pool); otherwise
  // local access only (LOCAL_WRITE, for READ targets).
  virtual Result<std::unique_ptr<Registration>> Register(void* addr, uint64_t length, bool remote) = 0;
  virtual Result<std::unique_ptr<CompletionQueue>> CreateCq(uint32_t depth) = 0;
  // An RC QP whose send side completes on `cq`, with room for `max_send_wr`
  // outstanding WRs; the receive side is unused (one-sided operations only).
  virtual Result<std::unique_ptr<QueuePair>> CreateQp(CompletionQueue* cq, uint32_t max_send_wr) = 0;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // Names of the RDMA devices present. No device at all (the library reports
  // ENOSYS, or the list is empty) is an empty vector, not an error.
  virtual Result<std::vector<std::string>> Devices() = 0;
  // Why Devices() is empty, for messages: "ibv_get_device_list found none",
  // or that libibverbs itself is missing and how to install it.
  virtual std::string WhyNoDevices() { return "ibv_get_device_list found none"; }
  // Opens `device` and queries `port` (PortInfo filled in, GIDs included).
  // NotFound naming the devices present when `device` is not one of them.
  virtual Result<std::unique_ptr<Context>> Open(const std::string& device, uint8_t port) = 0;
};

// rdma-core's libibverbs.
Provider& SystemProvider();

}  // namespace memkv::verbs

#endif  // MEMKV_VERBS_VERBS_H_
