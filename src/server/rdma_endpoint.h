// RdmaEndpoint: the server's side of the RDMA transport (docs/rdma.md).
//
// Made once at start-up: opens the configured device, checks rdma.mtu
// against the port's active MTU (start refuses when it is larger), resolves
// gid_index / traffic_class / service_level (0 = auto, detect.h), and
// registers the whole DRAM pool once with remote read and write access.
//
// Per client connection, Accept() answers the RDMA offer carried by Connect:
// it creates one responder QP per client QP and connects it with the
// resolved attributes. The server never posts work requests: clients move
// bytes with one-sided WRITE (put) and READ (get) into and out of the pool,
// at the addresses the control ops (RdmaPut / RdmaGet) hand out.
//
// Thread-safe: workers call Accept concurrently.
#ifndef MEMKV_SERVER_RDMA_ENDPOINT_H_
#define MEMKV_SERVER_RDMA_ENDPOINT_H_

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "config/server_config.h"
#include "memkv/status.h"
#include "proto/messages.h"
#include "storage/memory_store.h"
#include "verbs/detect.h"
#include "verbs/verbs.h"

namespace memkv::server {

// The longest segment a grant hands out. RemoteSegment::len is 32 bits, and a
// value in one run of the pool may be far longer (up to 64 GiB); 1 GiB pieces
// also fit every device's largest message (mlx5's max_msg_sz is 1 GiB), so
// the client posts one WR per segment.
inline constexpr uint64_t kMaxGrantSegmentBytes = uint64_t{1} << 30;

// The grant's segments for a value placed at `iov` (a PendingPut's or a
// ReadHandle's), in value order, none longer than kMaxGrantSegmentBytes.
std::vector<proto::RemoteSegment> GrantSegments(std::span<const iovec> iov);

// The slowest a client is assumed to move a granted value: half of what a
// 1 GbE link carries, well under any RDMA NIC and above Soft-RoCE in a guest.
inline constexpr uint64_t kGrantLeaseFloorBytesPerSecond = 32ULL << 20;

// How long a slot or pin of `value_bytes` may be held before the connection
// is closed: `base_ns` (rdma_grant_lease_ms, for the round trips and a
// stalled client) plus the time the value takes at
// kGrantLeaseFloorBytesPerSecond (16 GiB: about 8.5 minutes more). Saturates
// instead of overflowing.
Nanos RdmaGrantLease(Nanos base_ns, uint64_t value_bytes);

class RdmaEndpoint {
 public:
  // nullptr (with one INFO line) when the host has no RDMA device at all, or
  // the configured device is absent while others exist (a WARN naming them):
  // the server then serves TCP only. FailedPrecondition when rdma.mtu exceeds
  // the port's active MTU (start refuses), naming both values.
  static Result<std::unique_ptr<RdmaEndpoint>> Create(const config::RdmaConfig& config, storage::MemoryStore* store,
                                                      verbs::Provider& provider);
  ~RdmaEndpoint();

  // The answer to a client's offer; on acceptance `qps` receives the
  // connected responder QPs, which the connection owns (destroying them cuts
  // the client off from the pool).
  proto::RdmaAnswer Accept(const proto::RdmaOffer& offer, const std::string& peer,
                           std::vector<std::unique_ptr<verbs::QueuePair>>* qps);

  const verbs::PortInfo& port() const { return context_->port(); }
  // One line for the start-up log: device, port, MTU, GID, marking.
  std::string Describe() const;

 private:
  RdmaEndpoint() = default;

  Mutex mu_;  // serializes QP creation on the shared CQ (calls into the provider; no field to guard)
  std::unique_ptr<verbs::Context> context_;
  std::unique_ptr<verbs::Registration> pool_;
  std::unique_ptr<verbs::CompletionQueue> cq_;  // required by QP creation; nothing completes on it
  verbs::ResolvedPath path_;
  verbs::Gid gid_{};
  uint32_t mtu_ = 4096;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_RDMA_ENDPOINT_H_
